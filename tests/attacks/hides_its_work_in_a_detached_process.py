"""Attack on the CPU-second time limit (checker/core/cpu_time.py counts the checks process and its descendants): do
the work in a detached process — fork, start a new session, fork again, burn CPU forever — while the attempt itself
only waits for it. The checks process is a child subreaper (checker/trusted/checks_process.py), so the orphaned burner
is handed to it and stays a descendant: its CPU counts, the run ends at the limit's computing time and says so, and no
process outlives the run. (Were it not counted, the wall-clock backstop would end the run at three times the limit.)
The burner writes its pid to KATA_ATTACK_MARKER so the test can look for it."""
import os
import time

KATA, CHECKS = 1, ("structural_nodes_are_neutral",)
EXPECT = {"status": "timeout", "score": 0, "forks": True, "time_limit": 8, "message": "8 s of computing time"}


def _burn_elsewhere() -> None:
    marker = os.environ.get("KATA_ATTACK_MARKER")
    if marker and os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open(marker, "w") as handle:
                handle.write(str(os.getpid()))
            while True:
                pass
        os._exit(0)


def node_dialect(node):
    _burn_elsewhere()
    while True:  # "waiting for the result": no CPU of its own
        time.sleep(1)


def detect_dialect(gm):
    raise NotImplementedError
