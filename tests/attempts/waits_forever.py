"""An attempt that waits instead of computing: it spends no CPU time, so only the wall-clock backstop stops it."""
import time


def node_dialect(node):
    time.sleep(10_000)


def detect_dialect(gm):
    time.sleep(10_000)
