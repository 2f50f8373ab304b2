"""The learner's tools: `make watch`, hints, reset and restore, the progress file and `make progress`, and
`make diff` (which finishers and mentors use too).

May import: checker.run and everything below it. Not checker.mentor or checker.author.
"""
