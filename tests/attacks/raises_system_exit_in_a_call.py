"""Attack: raise SystemExit(0) inside a call, hoping the checks' process exits cleanly with it."""
KATA, CHECKS = 1, ("structural_nodes_are_neutral",)
EXPECT = {"status": "fail", "score": 0, "check_status": "error", "message": "sys.exit"}


def node_dialect(node):
    raise SystemExit(0)


def detect_dialect(gm):
    raise SystemExit(0)
