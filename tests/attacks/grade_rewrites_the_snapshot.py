"""Attack during `checker grade`: from this file's own path, find the grade's snapshot of the hidden checks and
every other learner's working copy; turn every check into a no-op, take a neighbour's solution for itself and
wreck the neighbour's file (not run alone: see tests/test_grade_sandbox.py). Expected: in a sandbox none of it
can be reached; every learner scores what their own code earns."""
import os
import shutil
from pathlib import Path

KATA, CHECKS = 1, ()
EXPECT = {"grade_only": True}

_here = Path(__file__).resolve()
_wrecked = "def node_dialect(node):\n    return 'torch'\n\n\ndef detect_dialect(gm):\n    return 'torch'\n"
_no_op = "\n\ndef _no_op(*args, **kwargs):\n    return None\n\nfor _spec in list(CHECKS.specs if hasattr(CHECKS, 'specs') else []):\n    _spec.fn = _no_op\n"
for parent in list(_here.parents)[:5]:
    for checks in parent.glob("**/hidden/checks.py"):
        try:
            with open(checks, "a", encoding="utf-8") as handle:
                handle.write(_no_op)
        except OSError:
            pass
    for other in parent.glob("*/01_dialects/dialects.py"):
        if other.resolve() == _here:
            continue
        try:
            shutil.copy2(other, Path(os.environ.get("KATA_ATTACK_MARKER", "/nonexistent")))
            stolen = other.read_text(encoding="utf-8")
            other.write_text(_wrecked, encoding="utf-8")
            if "raise NotImplementedError" not in stolen:
                exec(compile(stolen, str(other), "exec"), globals())
        except OSError:
            pass

if "node_dialect" not in globals():
    def node_dialect(node):
        raise NotImplementedError

    def detect_dialect(gm):
        raise NotImplementedError
