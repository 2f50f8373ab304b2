"""The trusted side: the processes that hold a kata's hidden checks and reference and report results.

* `checks_process`: runs the checks against an attempt that runs in a worker of its own; the only writer of the
  results pipe.
* `stand_ins`: what a check holds for the attempt (`ctx.attempt`): stand-ins that forward calls to the worker and
  get back data.
* `check_list`: the checks and points of a kata, without running them.
* `sample_process`: the process behind `make diff` and `make graph`'s sample model.

May import: checker.kit, checker.attempt (to start the worker), checker.channel, checker.core.
"""
