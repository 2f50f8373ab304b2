"""The kit kata authors write with: the one part of the checker a kata's hidden files import.

A kata's hidden checks, probes and samples, and the hand-written mutants and alternatives under tests/, import
from here (and from `checker.channel` where a probe handles graph descriptions), never from the modules that
run them, so the checker can change how it runs checks without touching a kata:

* `checks`: the `Checks` registry, `Context`, `expect`, `fuzz`, `load_reference` (checker/kit/checks.py);
* `samples` and `pictures`: what `make diff` and `make graph` show of a kata's sample model.

May import: checker.core. Imported by the trusted processes, the run, and the tools.
"""
from checker.core.modules import load_module
from checker.kit.checks import (
    DEFAULT_SEED,
    EXAMPLES_ENV,
    FUZZ_PROFILES,
    CheckFailed,
    Checks,
    CheckSpec,
    Context,
    _attempt_location,
    env_profile,
    example_database,
    expect,
    fuzz,
    load_reference,
)

__all__ = ["DEFAULT_SEED", "EXAMPLES_ENV", "FUZZ_PROFILES", "CheckFailed", "CheckSpec", "Checks", "Context",
           "_attempt_location", "env_profile", "example_database", "expect", "fuzz", "load_module", "load_reference"]
