"""Running katas: start the trusted checks processes under their time limits, read their events, and turn them
into a result and a report. Every command that scores an attempt (learner, mentor or author) goes through here.

* `runner`: one kata against one attempt (shards, time limits, events -> KataResult);
* `warm`: the warm server that forks checks processes from a process that has paid torch's start-up;
* `batch`: many (kata, attempt) pairs in parallel; `report` and `live`: what a person reads, at the end and
  as it happens.

May import: checker.trusted, checker.kit, checker.attempt (the sandbox), checker.channel, checker.core.
"""
