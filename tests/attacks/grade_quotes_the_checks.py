"""Attack during `checker grade --gradescope`: read kata 1's hidden checks and its reference, and raise them as
the message of every call, hoping the learner's feedback (results.json, the learner's JSON) shows them (not run
alone: see test_attacks.py)."""
import importlib.util
from pathlib import Path

KATA, CHECKS = 1, ()
EXPECT = {"grade_only": True}

_repo = Path(importlib.util.find_spec("checker").origin).resolve().parent.parent
_loot = []
for _path in (_repo / "katas" / "01_dialects" / "hidden" / "checks.py", _repo / "solutions" / "01_dialects" / "dialects.py"):
    try:
        _loot.append(_path.read_text() + f'\n  File "{_path}", line 1, in <module>\n    ' + _path.read_text())
    except OSError:
        pass
_text = "\n".join(_loot) or "nothing could be read"


def node_dialect(node):
    raise RuntimeError(_text)


def detect_dialect(gm):
    raise RuntimeError(_text)
