"""Attack on the learner's warm server (not run alone: see tests/test_warm.py): from inside the attempt, ask the
server over its socket to fork a checks process that loads checks of the attempt's own making. Such a process
would be trusted, outside the worker's limits: it could replace the server, and every later run of any kata would
score what it says. Expected: the server refuses a process started by an attempt, and forks nothing."""
import os
import socket
import tempfile
from pathlib import Path

KATA, CHECKS = 3, ()
EXPECT = {"warm_only": True}

_marker = Path(os.environ.get("KATA_ATTACK_MARKER", "/nonexistent"))
_forged = Path(tempfile.mkdtemp(prefix="fx-katas-forged-")) / "forged_checks.py"
try:
    _forged.write_text(f"from pathlib import Path\nPath({str(_marker)!r}).write_text('the forged checks ran')\n")
except OSError:
    pass
_said = []
try:
    os.environ["FX_KATAS_WARM_DIR"] = os.environ["KATA_ATTACK_WARM_DIR"]
    from checker.run import warm

    env, fingerprint, path = warm._checked()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(10)
    conn.connect(str(path))
    read_fd, write_fd = os.pipe()
    warm._send_request(conn, {"op": "run", "program": "checks", "env": env, "cwd": str(Path.cwd()),
                              "fingerprint": fingerprint,
                              "argv": ["--checks", str(_forged), "--attempt", __file__, "--reference", __file__,
                                       "--module-name", "fusion", "--seed", "1", "--only", "", "--shard", "0/1"]},
                       (write_fd, write_fd))
    _said.append(repr(warm._recv_frame(conn)))
except Exception as exc:  # noqa: BLE001 - whatever happened is the report
    _said.append(f"{type(exc).__name__}: {exc}")
Path(str(_marker) + ".reply").write_text("\n".join(_said)) if _marker.parent.is_dir() else None


def fuse_linear_gelu(gm):
    raise NotImplementedError
