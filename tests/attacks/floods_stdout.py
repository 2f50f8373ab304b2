"""Attack: print 100 MB through Python and write another 100 MB to file descriptor 1, hoping the checker
buffers it all (and runs out of memory) or drowns the report."""
import os
import sys

KATA, CHECKS = 1, ("structural_nodes_are_neutral",)
EXPECT = {"status": "fail", "score": 0, "max_output": 20_000}

_CHUNK = "x" * (1 << 20)
_flooded = []


def node_dialect(node):
    if not _flooded:
        _flooded.append(True)
        for _ in range(100):
            sys.stdout.write(_CHUNK)
        for _ in range(100):
            os.write(1, _CHUNK.encode())
    return "module"


def detect_dialect(gm):
    return node_dialect(None)
