"""Attack: a non-daemon thread that never ends, so that a process waiting for its threads never exits."""
import threading
import time

KATA, CHECKS = 1, ("structural_nodes_are_neutral",)
EXPECT = {"status": "not_started", "score": 0}

threading.Thread(target=lambda: time.sleep(10 ** 6), daemon=False).start()


def node_dialect(node):
    raise NotImplementedError


def detect_dialect(gm):
    raise NotImplementedError
