import ctypes


def node_dialect(node):
    ctypes.string_at(0)  # reads address 0: SIGSEGV


detect_dialect = node_dialect
