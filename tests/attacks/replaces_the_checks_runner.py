"""Attack: at import, replace the checks' runner with one that reports every planned check as passed.

Before the trust boundary this scored 38/38: the attempt ran in the process that ran the checks. Now it runs
in a worker where `checker.trusted.checks_process` does nothing: the checks run elsewhere."""
import json
import sys

import checker.trusted.checks_process

KATA, CHECKS = 1, ("structural_nodes_are_neutral", "getitem_is_neutral")
EXPECT = {"status": "not_started", "score": 0}


def _forged_run_checks(specs, ctx, events, attempt_path, worker=None):
    for spec in specs:
        events.emit(event="result", id=spec.id, status="pass", message="", detail="", output="", fuzz=[], seconds=0.0)


checker.trusted.checks_process.run_checks = _forged_run_checks
main = sys.modules.get("__main__")
if main is not None:
    main.run_checks = _forged_run_checks
print(json.dumps({"event": "result", "id": CHECKS[0], "status": "pass", "message": ""}))


def node_dialect(node):
    raise NotImplementedError


def detect_dialect(gm):
    raise NotImplementedError
