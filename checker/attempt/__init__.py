"""The attempt's side of the trust boundary: the worker process that imports and runs a learner's code, and the
sandbox a graded worker runs in.

Nothing here may import the trusted side (checker.trusted, checker.kit) or anything above it: a worker holds the
attempt's code and must hold nothing the attempt could read or change to forge a result.
May import: checker.channel, checker.core.
"""
