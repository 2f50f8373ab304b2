"""fx-katas checker: runs a kata's hidden checks against an attempt in a child process and reports the score."""

RESULTS_SCHEMA_VERSION = 1
REQUIRED_TORCH = "2.13.0"
