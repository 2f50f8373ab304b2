"""What a kata's hidden checks are written with.

A checks module (`katas/NN_slug/hidden/checks.py`) builds one `Checks` registry named `CHECKS` and
decorates plain functions with it:

    CHECKS = Checks()

    @CHECKS.check(stage="module", weight=2)
    def mlp_is_module_dialect(ctx):
        "symbolic_trace of an MLP of nn.Modules is MODULE"
        got = ctx.attempt.detect_dialect(gm)
        expect(got == Dialect.MODULE, f"detect_dialect returned {got!r}; expected Dialect.MODULE because ...")

A check passes by returning. It fails by raising `CheckFailed` (or AssertionError, e.g. from
`torch.testing.assert_close`) with a message written for the learner. Any other exception that escapes
is reported as an error in the attempt, located at the attempt's own file and line.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

FUZZ_PROFILES = {
    # examples per fuzz check; "learner" keeps `make kata` quick, "deep" is what `make mutate` runs on references
    # and on the mutants that pass every learner-profile check
    "learner": 12,
    "deep": 18,
}
DEFAULT_SEED = 20260
# Shrinking stops after this many examples past the first failure: a count, so that the same attempt gets the same
# counterexample however busy the machine (a time budget made slow checks shrink to different examples), with a
# time limit only as a safety net.
SHRINK_BUDGET_STEPS = 60
SHRINK_BUDGET_S = 120.0


class CheckFailed(AssertionError):
    """A check's verdict, with a message for the learner."""


def expect(condition: object, message: str) -> None:
    """Fail the running check with `message` unless `condition` holds."""
    if not condition:
        raise CheckFailed(message)


@dataclass(frozen=True)
class CheckSpec:
    id: str
    stage: str
    name: str
    weight: int
    func: Callable[["Context"], None]


@dataclass
class Context:
    """What every check receives: the attempt and reference modules and the run's fuzz settings."""

    attempt: ModuleType
    reference: ModuleType
    seed: int = DEFAULT_SEED
    profile: str = "learner"
    fuzz_runs: list[dict] = field(default_factory=list)  # per fuzz() call: examples tried and seconds (for `make bench`)
    check_id: str = ""  # the check running now: the key its failing examples are kept under (see fuzz)

    @property
    def max_examples(self) -> int:
        return FUZZ_PROFILES[self.profile]

    @property
    def deep(self) -> bool:
        """True under `make test`'s profile: a check may add slow, redundant coverage there, never new rules."""
        return self.profile == "deep"

    def probe(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`fn(attempt, *args, **kwargs)` where the attempt's code runs: in the worker process when the attempt
        is remote (checker/trusted/stand_ins.py), here otherwise.

        `fn` is a module-level function of a kata's `hidden/probes.py`: it runs the attempt's code inside torch
        machinery (torch.compile of a fix, a backend) and returns only data; the check asserts on that data.
        """
        run_remotely = getattr(self.attempt, "probe_in_worker", None)
        if run_remotely is not None:
            return run_remotely(fn, args, kwargs)
        return fn(self.attempt, *args, **kwargs)


class Checks:
    """An ordered registry of a kata's checks, and the services the worker may ask the trusted side for while
    it runs the attempt (kata 5's simulated NPU: `services["npu.compile"] = ...`).

    `worker_setup` names functions ("module:function") the worker calls with its service transport before it
    imports the attempt: kata 5's connects the worker's DEVICE to the device the checks read."""

    def __init__(self) -> None:
        self.specs: list[CheckSpec] = []
        self.services: dict[str, Callable[..., Any]] = {}
        self.worker_setup: list[str] = []

    def check(self, *, stage: str, weight: int = 1, name: str | None = None):
        def register(func: Callable[[Context], None]) -> Callable[[Context], None]:
            doc = (func.__doc__ or "").strip().splitlines()
            title = name or (doc[0] if doc else func.__name__.replace("_", " "))
            if any(spec.id == func.__name__ for spec in self.specs):
                raise ValueError(f"two checks are named {func.__name__}")
            self.specs.append(CheckSpec(func.__name__, stage, title, weight, func))
            return func

        return register


class _ShrinkBudgetSpent(BaseException):
    """Raised inside a Hypothesis run to stop shrinking; BaseException so Hypothesis does not treat it as a failure."""


def fuzz(
    ctx: Context,
    strategy: Any,
    prop: Callable[[Any], None],
    *,
    describe: Callable[[Any], str] = repr,
    max_examples: int | None = None,
) -> None:
    """Run `prop` on examples drawn from `strategy`; on failure raise CheckFailed with the shrunk example.

    Deterministic for a given `ctx.seed`: the same attempt gets the same verdict every run. The message
    carries `describe(example)` and the seed that replays it. NotImplementedError from the attempt is
    re-raised at once instead of being shrunk, so an unfinished function reads as unfinished.
    """
    from hypothesis import HealthCheck, Phase, given, seed, settings

    state: dict[str, Any] = {"failure": None, "example": None, "not_implemented": None}
    deadline = [None]
    first_failure = [0]  # examples tried when the first failure came
    database = example_database()
    _seed_alone_decides()

    @settings(
        max_examples=max_examples or ctx.max_examples,
        database=database,
        deadline=None,
        derandomize=False,
        print_blob=False,
        phases=[Phase.explicit, *([Phase.reuse] if database is not None else []), Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @seed(ctx.seed)
    @given(strategy)
    def run(example: Any) -> None:
        stats["examples"] += 1
        if state["not_implemented"] is not None:
            return
        if deadline[0] is not None and (stats["examples"] - first_failure[0] > SHRINK_BUDGET_STEPS
                                        or time.monotonic() > deadline[0]):
            raise _ShrinkBudgetSpent
        try:
            prop(example)
        except NotImplementedError as exc:
            state["not_implemented"] = exc
            return
        except Exception as exc:
            state["failure"], state["example"] = exc, example
            if deadline[0] is None:
                deadline[0] = time.monotonic() + SHRINK_BUDGET_S
                first_failure[0] = stats["examples"]
            raise

    # each check's failing examples under a key of its own (Hypothesis keys by the test function: one for all)
    run._hypothesis_internal_add_digest = f"{ctx.check_id}|{ctx.profile}".encode()
    stats = {"examples": 0, "seconds": 0.0}
    started = time.monotonic()
    stopped_while_shrinking = False
    try:
        run()
    except _ShrinkBudgetSpent:
        pass
    except KeyboardInterrupt:
        raise
    except Exception:
        if state["failure"] is None:  # Hypothesis itself failed (e.g. Flaky): report what we saw
            raise
    except BaseException:  # the channel broke: the worker was stopped (this check's time limit) or crashed
        if state["failure"] is None:
            raise
        stopped_while_shrinking = True  # after a failing example was found: that example is the verdict
    finally:
        stats["seconds"] = round(time.monotonic() - started, 3)
        ctx.fuzz_runs.append(stats)
    if state["not_implemented"] is not None:
        raise state["not_implemented"]
    if state["failure"] is None:
        return
    failure = state["failure"]
    headline = str(failure).strip() or type(failure).__name__
    raised_by_attempt = getattr(failure, "remote_type", None) is not None  # an exception from the worker
    if raised_by_attempt or not isinstance(failure, AssertionError):
        headline = f"your code raised {type(failure).__name__}{_attempt_location(ctx, failure)}: {headline}"
    stopped = ("\n(Making this example smaller was cut short: the process running your code was stopped, at this "
               "check's time limit or by a crash, while smaller examples were tried. This one fails; a smaller one "
               "may too.)" if stopped_while_shrinking else "")
    error = CheckFailed(
        f"{headline}\n\n{'A' if stopped else 'Smallest'} failing example found:\n{describe(state['example'])}\n"
        f"(replay with --seed {ctx.seed}){stopped}"
    )
    error.found_before_stop = stopped_while_shrinking  # run_checks: a failure, not a timeout
    raise error from failure


def _seed_alone_decides() -> None:
    """Hypothesis mixes into its draws the literal constants of every local module loaded in the process (its
    "local constants"). A warm-forked checks process has loaded other modules than a cold one, so the same seed
    drew other examples and the same attempt could get another verdict. Draws here depend on the seed alone."""
    from hypothesis.internal.conjecture import providers

    empty = providers.Constants(integers=providers.SortedSet(), floats=providers.SortedSet(key=providers.float_to_int),
                                bytes=providers.SortedSet(), strings=providers.SortedSet())
    providers._get_local_constants = lambda: empty


EXAMPLES_ENV = "FX_KATAS_EXAMPLES"  # a folder: the learner's failing examples, replayed first on the next run


def example_database() -> Any:
    """Hypothesis's example database in the folder FX_KATAS_EXAMPLES names (the runner sets it for the learner's
    own file, never for a grade: there every run is the seed's alone), or None. With it, the smallest failing
    example of the last run is tried first, so a learner who has not fixed it sees the failure at once."""
    folder = os.environ.get(EXAMPLES_ENV)
    if not folder:
        return None
    from hypothesis.database import DirectoryBasedExampleDatabase

    return DirectoryBasedExampleDatabase(folder)


def _attempt_location(ctx: Context, exc: BaseException) -> str:
    """' at file:line' of the innermost attempt frame in exc's traceback, or ''."""
    import traceback
    from pathlib import Path

    line = getattr(exc, "attempt_line", None)
    if line:  # raised in the worker, which located it in the attempt's file
        name = getattr(exc, "attempt_function", "")
        return f" at {Path(ctx.attempt.__file__).name}:{line}" + (f" in {name}()" if name else "")
    attempt_file = getattr(ctx.attempt, "__file__", None)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if attempt_file and Path(f.filename) == Path(attempt_file)]
    return f" at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name}()" if frames else ""


def env_profile() -> str:
    """The fuzz profile named by FX_KATAS_PROFILE, defaulting to the learner profile."""
    profile = os.environ.get("FX_KATAS_PROFILE", "learner")
    return profile if profile in FUZZ_PROFILES else "learner"


def load_reference(slug: str, module: str) -> "ModuleType":
    """The reference solution `solutions/<slug>/<module>` as a module of its own (used by test mutants,
    which import the reference and replace only the function that holds the mistake)."""
    from pathlib import Path

    from checker.core.manifest import SOLUTIONS_DIR
    from checker.core.modules import load_module

    root = Path(os.environ.get("FX_KATAS_SOLUTIONS_DIR") or SOLUTIONS_DIR)  # a grading run's snapshot
    return load_module(root / slug / module, f"reference_base_{slug}")
