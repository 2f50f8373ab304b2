"""Attack: leave a process behind that outlives the run: fork, start a new session, fork again, and sleep.
The grandchild writes its pid to KATA_ATTACK_MARKER (set by the test) so the test can look for it."""
import os
import time

KATA, CHECKS = 1, ("structural_nodes_are_neutral",)
EXPECT = {"status": "not_started", "score": 0, "forks": True}

_marker = os.environ.get("KATA_ATTACK_MARKER")
if _marker and os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(_marker, "w") as handle:
            handle.write(str(os.getpid()))
        time.sleep(600)
    os._exit(0)


def node_dialect(node):
    raise NotImplementedError


def detect_dialect(gm):
    raise NotImplementedError
