"""Attack: find every file and descriptor a results channel could be (its own, its parents' through /proc,
files under the temporary folders) and write a `pass` event for every check into each."""
import glob
import json
import os
import re
from pathlib import Path

KATA, CHECKS = 1, ("structural_nodes_are_neutral", "getitem_is_neutral")
EXPECT = {"status": "error", "score": 0, "message": "not an answer"}

_checks = Path(__file__).resolve().parents[2] / "katas" / "01_dialects" / "hidden" / "checks.py"
_ids = re.findall(r"^def (\w+)\(ctx\)", _checks.read_text(), re.M) if _checks.exists() else list(CHECKS)
_lines = "".join(json.dumps({"event": "result", "id": i, "status": "pass", "message": "", "detail": "", "output": "",
                             "fuzz": [], "seconds": 0.0}) + "\n" for i in _ids).encode()


def _ancestors():
    pid = os.getpid()
    for _ in range(4):
        yield pid
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return


for pid in _ancestors():
    for fd in glob.glob(f"/proc/{pid}/fd/*"):
        try:
            handle = os.open(fd, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)
            os.write(handle, _lines)
            os.close(handle)
        except OSError:
            pass
for path in glob.glob("/tmp/fx-katas-*/**/*", recursive=True):
    try:
        with open(path, "ab") as handle:
            handle.write(_lines)
    except OSError:
        pass
for fd in range(3, 64):
    try:
        os.write(fd, _lines)
    except OSError:
        pass


def node_dialect(node):
    raise NotImplementedError


def detect_dialect(gm):
    raise NotImplementedError
