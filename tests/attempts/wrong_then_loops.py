"""Kata 1 attempt: a wrong answer on its first call, then a loop that never ends on every call after it: the fuzz
check finds a failing example at once and is stopped at its time limit while Hypothesis tries smaller ones."""

CALLS = [0]


def node_dialect(node):
    CALLS[0] += 1
    while CALLS[0] > 1:
        pass
    return "not a dialect"


detect_dialect = node_dialect
