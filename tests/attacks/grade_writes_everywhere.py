"""Attack during `checker grade`: write over the kata's stub, the reference, the progress file and the next
learner's attempt, hoping to change other learners' results (not run alone: see tests/test_grade_sandbox.py)."""
import os
from pathlib import Path

KATA, CHECKS = 1, ()
EXPECT = {"grade_only": True}

_repo = Path(os.environ.get("KATA_ATTACK_REPO", "/nonexistent"))
_others = Path(os.environ.get("KATA_ATTACK_LEARNERS", "/nonexistent"))
_wrong = "def node_dialect(node):\n    return 'torch'\n\n\ndef detect_dialect(gm):\n    return 'torch'\n"
try:  # in a grading sandbox the other learners' folder is empty, or cannot even be listed
    _neighbours = list(_others.glob("*/01_dialects/dialects.py"))
except OSError:
    _neighbours = []
for target in [_repo / "katas" / "01_dialects" / "dialects.py", _repo / "solutions" / "01_dialects" / "dialects.py",
               _repo / ".kata-progress.json", *_neighbours]:
    try:
        target.write_text(_wrong if target.suffix == ".py" else "{}")
    except OSError:
        pass


def node_dialect(node):
    raise NotImplementedError


def detect_dialect(gm):
    raise NotImplementedError
