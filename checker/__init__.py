"""fx-katas checker: runs a kata's hidden checks against an attempt and reports the score.

`cli.py` is every command. The folders say which side of the trust boundary a module lives on and who uses it,
from the floor up:

    core/      what every part shares (the manifest, mutation reports, stubs, loading kata files, processes)
    channel/   what crosses between the trusted side and the attempt, and how
    attempt/   the worker that runs an attempt, and the sandbox a graded one runs in
    kit/       what a kata's hidden checks are written with
    trusted/   the processes that hold the hidden checks and the reference
    run/       scoring a kata: time limits, the warm server, events into a result and a report
    learner/ mentor/ author/   the tools of each audience

Each folder's __init__ says what it may import; tests/test_layers.py holds the table.
"""

import os as _os

RESULTS_SCHEMA_VERSION = 1
# Read before anything slow is imported: `make watch` stops once the process that started it is gone (its
# terminal closed), and a parent that ended during a slow start must still count as gone (checker/learner/watch.py).
PARENT_AT_START = _os.getppid()
REQUIRED_TORCH = "2.13.0"
