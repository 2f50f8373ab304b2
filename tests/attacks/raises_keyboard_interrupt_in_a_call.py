"""Attack: raise KeyboardInterrupt inside a call, which a checker that lets Ctrl-C through would stop on."""
KATA, CHECKS = 1, ("structural_nodes_are_neutral",)
EXPECT = {"status": "fail", "score": 0, "check_status": "error", "message": "KeyboardInterrupt"}


def node_dialect(node):
    raise KeyboardInterrupt


def detect_dialect(gm):
    raise KeyboardInterrupt
