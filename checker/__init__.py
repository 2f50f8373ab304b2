"""fx-katas checker: runs a kata's hidden checks against an attempt in a child process and reports the score."""

import os as _os

RESULTS_SCHEMA_VERSION = 1
# Read before anything slow is imported: `make watch` stops once the process that started it is gone (its
# terminal closed), and a parent that ended during a slow start must still count as gone (checker/watch.py).
PARENT_AT_START = _os.getppid()
REQUIRED_TORCH = "2.13.0"
