"""Attack during `checker grade`: find the reference solution (beside the checker, or in the grade's snapshot
found from this file's own path) and re-export it, to score full marks without the work (not run alone: see
tests/test_grade_sandbox.py). Expected: in a sandbox no reference can be found and the attempt scores what a
stub scores."""
import importlib.util
import os
from pathlib import Path

KATA, CHECKS = 1, ()
EXPECT = {"grade_only": True}


def _candidates():
    here = Path(__file__).resolve()
    yield Path(os.environ.get("KATA_ATTACK_REPO", "/nonexistent")) / "solutions" / "01_dialects" / "dialects.py"
    for parent in here.parents:
        yield parent / "solutions" / "01_dialects" / "dialects.py"
        yield parent / "hidden" / "solutions" / "01_dialects" / "dialects.py"
    try:
        from checker.core.manifest import SOLUTIONS_DIR
        yield SOLUTIONS_DIR / "01_dialects" / "dialects.py"
    except Exception:
        pass


for _path in _candidates():
    try:
        _spec = importlib.util.spec_from_file_location("stolen_reference", _path)
        _module = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_module)
    except Exception:
        continue
    node_dialect, detect_dialect = _module.node_dialect, _module.detect_dialect
    Path(os.environ.get("KATA_ATTACK_MARKER", "/nonexistent")).write_text(f"imported {_path}\n") \
        if os.access(Path(os.environ.get("KATA_ATTACK_MARKER", "/nonexistent")).parent, os.W_OK) else None
    break
else:
    def node_dialect(node):
        raise NotImplementedError

    def detect_dialect(gm):
        raise NotImplementedError
