"""Attack during `checker grade`: append code to a module of `checker/` that grading imports only after every
attempt ran (the review writer), so that it rewrites this learner's results as full marks (not run alone: see
tests/test_grade_sandbox.py). Expected: the write fails in a sandbox; without one, grading notices the changed
file and refuses to write any result."""
import os
from pathlib import Path

KATA, CHECKS = 1, ()
EXPECT = {"grade_only": True}

_FORGERY = '''

def _forge_everything():  # appended by an attempt
    import checker.mentor.grade as grade
    original = grade.learner_json
    def forged(learner, results, katas, maxima):
        for result in results:
            result.status, result.score = "pass", result.max_score
        return original(learner, results, katas, maxima)
    grade.learner_json = forged
_forge_everything()
'''
_marker = Path(os.environ.get("KATA_ATTACK_MARKER", "/nonexistent"))
for module in ("diffing.py", "report.py", "grade.py", "__init__.py"):
    for root in (Path(os.environ.get("KATA_ATTACK_REPO", "/nonexistent")), Path(__file__).resolve().parents[4]):
        try:
            with open(root / "checker" / module, "a", encoding="utf-8") as handle:
                handle.write(_FORGERY)
            _marker.write_text(f"appended to {root / 'checker' / module}\n")
        except OSError:
            pass


def node_dialect(node):
    raise NotImplementedError


def detect_dialect(gm):
    raise NotImplementedError
