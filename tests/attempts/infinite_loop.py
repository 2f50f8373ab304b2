def node_dialect(node):
    while True:
        pass


def detect_dialect(gm):
    while True:
        pass
