"""Attack: allocate memory without bound inside a call."""
KATA, CHECKS = 1, ("structural_nodes_are_neutral",)
EXPECT = {"status": "error", "score": 0, "message": "ran out of memory"}
ENV = {"FX_KATAS_MEMORY_LIMIT_MB": "1536"}  # the limit is configurable; a lower one reaches it sooner


def node_dialect(node):
    hoard = []
    while True:
        hoard.append(bytearray(64 << 20))


def detect_dialect(gm):
    return node_dialect(None)
