"""Attack: end the process with os._exit(0) in the middle of a call, as if everything had finished."""
import os

KATA, CHECKS = 1, ("structural_nodes_are_neutral", "getitem_is_neutral")
EXPECT = {"status": "error", "score": 0, "message": "exited with code 0"}


def node_dialect(node):
    os._exit(0)


def detect_dialect(gm):
    os._exit(0)
