def node_dialect(node)
    return None
