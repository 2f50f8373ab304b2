"""The channel between the trusted checks process and the worker that runs an attempt: what may cross, and how.

* `wire`: frames on the socket; trusted -> worker by pickle, worker -> trusted as plain data only; the references
  the trusted side uses for objects the worker holds.
* `answers`: the worker's answers read back on the trusted side as data (`from_plain`), never as objects that run
  the worker's code.
* `graphs`: a graph the attempt changed crosses as a description and is rebuilt from torch's own ops.

Both sides import this package, so it may import only checker.core.
"""
