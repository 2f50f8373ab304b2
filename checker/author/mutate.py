"""`python -m checker mutate K` (`make mutate N=k`): mutation testing of a kata's hidden checks.

cosmic-ray's operators (checker/author/mutants.py) mutate the reference solution `solutions/NN_slug/<module>`; the
kata's own checks are the oracle (checker/author/oracle.py): a mutant is killed when the checker would not say `pass`.
A mutant that passes every check in the learner profile is run again on every check in the deep profile before it is
called a survivor. A survivor is either equivalent (it behaves the same by the lesson's contract: write why in
the report) or a missing check.
"""
from __future__ import annotations

import os
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Callable

from checker.core.manifest import REPO_ROOT, Kata
from checker.kit import DEFAULT_SEED
from checker.core.mutation_report import (HandMutant, Report, Survivor, alternatives, hand_mutants, keep_reasons,
                                     load_report, mutant_sha256, relative, report_path, sha256)

DIFF_LINES_SHOWN = 6


class MutateError(Exception):
    """The run cannot give verdicts (the reference fails its own checks, the tool is missing...)."""


@dataclass
class Outcome:
    """What became of one mutant."""

    mutant: object  # checker.author.mutants.Mutant
    result: str  # killed | timeout | survived | incompetent | no_op
    check: str = ""
    message: str = ""
    deep: bool = False  # killed only by the deep re-run


@dataclass
class Run:
    kata: Kata
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0  # generating, warming up, the reference, every mutant (and the deep re-runs)
    hand_seconds: float = 0.0  # scoring the hand-written mutants with the real checker
    cpu_seconds: float = 0.0  # CPU used by the oracle's parent and every mutant's child: the machine's load aside
    check_stats: dict[str, dict[str, float]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    hand: list[HandMutant] = field(default_factory=list)
    alternatives: list[HandMutant] = field(default_factory=list)  # the correct alternatives: what each fails

    def count(self, result: str) -> int:
        return sum(o.result == result for o in self.outcomes)

    @property
    def ran(self) -> int:
        return sum(o.result in ("killed", "timeout", "survived") for o in self.outcomes)

    @property
    def score(self) -> float:
        return (self.count("killed") + self.count("timeout")) / self.ran if self.ran else 1.0

    @property
    def rate(self) -> float:
        return self.ran / self.seconds if self.seconds else 0.0

    def survivors(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.result == "survived"]


def _require_tool() -> None:
    from checker.author.mutants import TOOL_VERSION, installed_tool_version

    found = installed_tool_version()
    if found != TOOL_VERSION:
        where = f"cosmic-ray {found} is installed" if found else "cosmic-ray is not installed"
        raise MutateError(f"{where}; mutation testing needs cosmic-ray=={TOOL_VERSION}: run `make mutate` "
                          f"(its setup installs the `test` extra) or `.venv/bin/python -m pip install -e '.[test]'`")


def list_mutants(kata: Kata) -> list:
    from checker.author.mutants import generate

    return generate(kata.solution_path.read_text(encoding="utf-8"), str(kata.solution_path))


# --- ordering the checks -----------------------------------------------------------------------------------

class CheckOrder:
    """Which checks a mutant meets first: the ones that killed mutants of the same function in this run, then
    the ones that kill most per second (kills remembered from the previous report, seconds on the reference)."""

    def __init__(self, check_ids: tuple[str, ...], seconds: dict[str, float], previous_kills: dict[str, int]) -> None:
        self.check_ids = check_ids
        self.seconds = seconds
        self.kills = Counter(previous_kills)
        self.by_function: dict[str, Counter] = defaultdict(Counter)

    def __call__(self, function: str) -> list[str]:
        local = self.by_function[function]

        def key(check: str) -> tuple[float, float]:
            return (-local[check], -(self.kills[check] + 1) / max(self.seconds.get(check, 1.0), 0.02))

        return sorted(self.check_ids, key=key)

    def killed(self, function: str, check: str) -> None:
        self.kills[check] += 1
        self.by_function[function][check] += 1


# --- the run -----------------------------------------------------------------------------------------------

def mutate(kata: Kata, *, jobs: int, seed: int = DEFAULT_SEED, time_limit: float | None = None,
           hand: bool = True, hand_checker: bool = False, say: Callable[[str], None] = print) -> Run:
    """Generate the mutants of the kata's reference and give each a verdict; with `hand`, also every check each
    hand-written mutant and each correct alternative fails (in the oracle, or with `hand_checker` by `checker kata`
    itself)."""
    from checker.author.oracle import Job, Oracle, Target

    _require_tool()
    started, cpu_started = time.monotonic(), time.process_time()
    run = Run(kata)
    # hashed before anything is loaded, so that a file edited during the run makes the report stale
    hashed_first = {relative(path): sha256(path) for path in (kata.checks_path, kata.solution_path)}
    mutants = list_mutants(kata)
    say(f"kata {kata.number}: {len(mutants)} mutants of {relative(kata.solution_path)} "
        f"(cosmic-ray, {sum(m.kind == 'mutant' for m in mutants)} to run); warming up...")
    with Oracle(Target.of(kata), seed=seed) as oracle:
        baseline = _baseline(oracle, kata)
        seconds = {c.id: c.seconds for c in baseline.checks}
        run.files = {name: sha256(REPO_ROOT / name) for name in baseline.files} | hashed_first
        limit = time_limit or 2 * baseline.cpu + 20
        previous = load_report(kata)
        order = CheckOrder(oracle.check_ids, seconds,
                           {k: int(v.get("kills", 0)) for k, v in (previous.checks if previous else {}).items()})
        runnable = [m for m in mutants if m.kind == "mutant"]
        by_key = {m.id: m for m in runnable}
        run.outcomes = [Outcome(m, m.kind) for m in mutants if m.kind != "mutant"]
        say(f"the reference passes all {len(seconds)} checks (the deep profile too), in {baseline.cpu:.1f} CPU seconds "
            f"for the learner profile; each mutant runs them until one fails ({jobs} at a time, limit {limit:.0f} "
            f"CPU seconds)")
        progress = _Progress(len(runnable), say)
        survivors = []
        jobs_list = [Job(m.id, source=m.source) for m in runnable]
        children_cpu = baseline.cpu
        for verdict in oracle.run(jobs_list, workers=jobs, time_limit=limit,
                                  order=lambda job: order(by_key[job.key].function)):
            mutant = by_key[verdict.key]
            children_cpu += verdict.cpu or (limit if verdict.outcome == "timeout" else 0.0)
            if verdict.outcome == "survived":
                survivors.append(mutant)
            else:
                result = "timeout" if verdict.outcome == "timeout" else "killed"
                if verdict.check:
                    order.killed(mutant.function, verdict.check)
                run.outcomes.append(Outcome(mutant, result, verdict.check, verdict.message or verdict.status))
            progress.step(verdict.outcome)
        if survivors:
            say(f"{len(survivors)} passed every check; re-running them on every check in the deep profile...")
            deep_jobs = [Job(m.id, source=m.source, profile="deep") for m in survivors]
            for verdict in oracle.run(deep_jobs, workers=jobs, time_limit=limit * 4,
                                      order=lambda job: order(by_key[job.key].function)):
                mutant = by_key[verdict.key]
                children_cpu += verdict.cpu or (limit * 4 if verdict.outcome == "timeout" else 0.0)
                result = {"survived": "survived", "timeout": "timeout"}.get(verdict.outcome, "killed")
                run.outcomes.append(Outcome(mutant, result, verdict.check, verdict.message or verdict.status, deep=True))
        run.outcomes.sort(key=lambda o: (o.mutant.line, o.mutant.id))
        run.check_stats = {check: {"kills": _run_kills(run, check), "seconds": round(seconds.get(check, 0.0), 3)}
                           for check in oracle.check_ids}
        run.seconds = round(time.monotonic() - started, 1)  # mutants/s counts this part only
        run.cpu_seconds = round(time.process_time() - cpu_started + children_cpu, 1)
        if hand and not hand_checker:
            started = time.monotonic()
            run.hand, run.alternatives = score_hand_written_in_oracle(oracle, kata, jobs=jobs, time_limit=2 * limit,
                                                                      say=say)
            run.hand_seconds = round(time.monotonic() - started, 1)
    if hand and hand_checker:
        started = time.monotonic()
        run.hand = score_with_checker(kata, hand_mutants(kata), mutant_sha256, jobs=jobs, seed=seed, say=say)
        run.alternatives = score_with_checker(kata, alternatives(kata), sha256, jobs=jobs, seed=seed, say=say)
        run.hand_seconds = round(time.monotonic() - started, 1)
    return run


def rescore_hand_written(kata: Kata, *, jobs: int, seed: int = DEFAULT_SEED,
                         say: Callable[[str], None] = print) -> Run:
    """`--hand-only`: the report's cosmic-ray verdicts kept, its hand-written mutants and alternatives scored
    again. Sound only while every file the report names is unchanged (those verdicts depend on nothing else), so
    it refuses otherwise: after a new mutant, a corrected KILLED_BY or a new alternative, not after a changed check."""
    from checker.author.oracle import Oracle, Target

    previous = load_report(kata)
    if previous is None:
        raise MutateError(f"--hand-only needs a report to keep: {relative(report_path(kata))} does not exist; "
                          f"run `make mutate N={kata.number}`")
    stale = previous.stale_files()
    if stale:
        raise MutateError(f"--hand-only keeps the report's verdicts, but they were computed on other files "
                          f"({'; '.join(stale)}): run `make mutate N={kata.number}` without it")
    started = time.monotonic()
    run = Run(kata, files=dict(previous.files))
    limit = 2 * kata.time_limit
    with Oracle(Target.of(kata), seed=seed) as oracle:
        run.hand, run.alternatives = score_hand_written_in_oracle(oracle, kata, jobs=jobs, time_limit=limit, say=say)
    run.hand_seconds = round(time.monotonic() - started, 1)
    return run


def _run_kills(run: Run, check: str) -> int:
    return sum(o.check == check and o.result == "killed" and not o.deep for o in run.outcomes)


def _baseline(oracle, kata: Kata):
    """The reference through the oracle, every check, in the learner profile and then the deep one: it must pass
    them all, or no verdict means anything (survivors are re-run in the deep profile). Returns the learner run."""
    from checker.author.oracle import Job

    verdicts = []
    for profile in ("learner", "deep"):
        verdict = next(oracle.run([Job("reference", path=kata.solution_path, stop_at_first=False, profile=profile)],
                                  time_limit=4 * kata.time_limit))
        if verdict.outcome != "survived":
            what = f"check {verdict.check} ({verdict.status}): {verdict.message}" if verdict.check else verdict.message
            raise MutateError(f"the reference {relative(kata.solution_path)} does not pass its own checks in the "
                              f"{profile} profile of the mutation oracle, so no mutant's verdict would mean anything: "
                              f"{what[:600]}")
        verdicts.append(verdict)
    return verdicts[0]


class _Progress:
    def __init__(self, total: int, say: Callable[[str], None]) -> None:
        self.total, self.say = total, say
        self.counts: Counter = Counter()
        self.started = time.monotonic()
        self.tty = sys.stdout.isatty()

    def step(self, outcome: str) -> None:
        self.counts[outcome] += 1
        done = sum(self.counts.values())
        rate = done / max(time.monotonic() - self.started, 1e-6)
        line = (f"  {done}/{self.total}: {self.counts['killed'] + self.counts['crashed']} killed, "
                f"{self.counts['timeout']} timeouts, {self.counts['survived']} passed every check "
                f"({rate:.2f} mutants/s)")
        if self.tty:
            print("\r" + line, end="\n" if done == self.total else "", flush=True)
        elif done == self.total or done % 20 == 0:
            self.say(line)


# --- hand-written mutants ----------------------------------------------------------------------------------

def score_hand_written_in_oracle(oracle, kata: Kata, *, jobs: int, time_limit: float,
                                 say: Callable[[str], None] = print) -> tuple[list[HandMutant], list[HandMutant]]:
    """Every check each hand-written mutant (tests/mutants/<slug>/) and each correct alternative
    (tests/alternatives/<slug>/) fails, learner profile, in the warm oracle: what a mutant's KILLED_BY must equal,
    and nothing for an alternative. (A third of the CPU of `checker kata --attempt` per file, which starts three
    processes that each import torch; tests/test_katas.py still scores one of each with the real checker.)"""
    return (_score_in_oracle(oracle, hand_mutants(kata), mutant_sha256, "hand-written mutants", jobs, time_limit, say),
            _score_in_oracle(oracle, alternatives(kata), sha256, "correct alternatives", jobs, time_limit, say))


def _score_in_oracle(oracle, files: list[Path], digest: Callable[[Path], str], what: str, jobs: int,
                     time_limit: float, say: Callable[[str], None]) -> list[HandMutant]:
    from checker.author.oracle import Job

    if not files:
        return []
    say(f"scoring {len(files)} {what} on every check...")
    by_key = {relative(path): path for path in files}
    found = []
    for verdict in oracle.run([Job(key, path=path, stop_at_first=False) for key, path in by_key.items()],
                              workers=jobs, time_limit=time_limit):
        failing = verdict.failing
        if verdict.outcome in ("timeout", "crashed") or verdict.status == "import_error":
            failing = failing + [f"<{verdict.status or verdict.outcome}: {verdict.message[:120]}>"]
        found.append(HandMutant(verdict.key, digest(by_key[verdict.key]), sorted(failing)))
    return sorted(found, key=lambda m: m.file)


def score_with_checker(kata: Kata, files: list[Path], digest: Callable[[Path], str], *, jobs: int,
                       seed: int = DEFAULT_SEED, say: Callable[[str], None] = print) -> list[HandMutant]:
    """Every check each file fails, scored by the real checker (`checker kata --attempt`, learner profile)."""
    from checker.run.runner import run_kata, run_many

    if not files:
        return []
    say(f"scoring {len(files)} files of tests/ on every check with the checker itself...")
    jobs_list = [lambda path=path: run_kata(kata, path, seed=seed, profile="learner") for path in files]
    found: list[HandMutant] = []
    for index, result in run_many(jobs_list, workers=jobs):
        path = files[index]
        if isinstance(result, BaseException):
            raise MutateError(f"{relative(path)}: the checker failed: {result}")
        failing = sorted(c.id for c in result.checks if c.status != "pass")
        if result.status in ("error", "timeout") and not failing:
            failing = [f"<{result.status}: {result.message[:120]}>"]
        found.append(HandMutant(relative(path), digest(path), failing))
    return sorted(found, key=lambda m: m.file)


# --- the report --------------------------------------------------------------------------------------------

def build_report(run: Run, previous: Report | None) -> Report:
    from checker.author.mutants import TOOL, TOOL_VERSION, selected_operators

    kata = run.kata
    survivors = []
    for outcome in run.survivors():
        m = outcome.mutant
        survivors.append(Survivor(m.id, m.operator.removeprefix("core/"), m.function, m.line, m.diff))
    totals = {
        "mutants": len(run.outcomes), "killed": run.count("killed"), "survived": run.count("survived"),
        "timeouts": run.count("timeout"), "incompetent": run.count("incompetent"), "no_op": run.count("no_op"),
        "killed_only_by_deep": sum(o.deep and o.result in ("killed", "timeout") for o in run.outcomes),
        "score": round(run.score, 4), "seconds": float(run.seconds), "mutants_per_second": round(run.rate, 3),
        "cpu_seconds": float(run.cpu_seconds), "hand_mutants_seconds": float(run.hand_seconds),
    }
    report = Report(kata.number, kata.slug, TOOL, TOOL_VERSION, date.today().isoformat(), DEFAULT_SEED, run.files,
                    list(selected_operators()), totals, run.check_stats, survivors, run.hand, run.alternatives)
    keep_reasons(report, previous)
    return report


def rescored_report(run: Run, previous: Report) -> Report:
    """`previous` with `run`'s hand-written mutants and alternatives (from `rescore_hand_written`)."""
    from dataclasses import replace

    totals = dict(previous.totals, hand_mutants_seconds=float(run.hand_seconds))
    return replace(previous, hand_mutants=run.hand, alternatives=run.alternatives, totals=totals)


def currency(kata: Kata) -> list[str]:
    """Why the report on disk is not current (empty when it is)."""
    report = load_report(kata)
    if report is None:
        return [f"{relative(report_path(kata))} does not exist"]
    problems = report.stale_files() + report.stale_hand_mutants(kata) + report.stale_alternatives(kata)
    for name in (relative(kata.solution_path), relative(kata.checks_path)):
        if name not in report.files:
            problems.append(f"the report does not name {name}")
    return problems


# --- what the command prints -------------------------------------------------------------------------------

def summary(run: Run) -> str:
    lines = [
        f"kata {run.kata.number}: {len(run.outcomes)} mutants: {run.count('killed')} killed, {run.count('survived')} "
        f"survived, {run.count('timeout')} timeouts, {run.count('incompetent')} incompetent, {run.count('no_op')} no-op",
        f"score {run.score:.1%}; {run.ran} mutants run in {run.seconds:.0f} s ({run.rate:.2f} mutants/s; "
        f"{run.cpu_seconds:.0f} CPU seconds in all, {run.ran / max(run.cpu_seconds, 1e-9):.2f} mutants per CPU second)",
    ]
    timeouts = [o for o in run.outcomes if o.result == "timeout"]
    if timeouts:
        lines.append(f"{len(timeouts)} timed out (killed): " + ", ".join(o.mutant.id for o in timeouts[:8]))
    deep = [o for o in run.outcomes if o.deep and o.result != "survived"]
    if deep:
        lines.append(f"{len(deep)} killed only by the deep profile: " + ", ".join(f"{o.mutant.id} ({o.check or o.result})" for o in deep[:5]))
    survivors = run.survivors()
    if survivors:
        lines.append(f"\n{len(survivors)} survivors (each passed every check, the deep profile too):")
        for outcome in survivors:
            lines.append(render_mutant(outcome.mutant))
    for mutant in run.hand:
        lines.append(f"hand-written {Path(mutant.file).name}: fails {', '.join(mutant.failing) or 'nothing'}")
    for alternative in run.alternatives:
        verdict = f"FAILS {', '.join(alternative.failing)}: a check too narrow" if alternative.failing else "passes every check"
        lines.append(f"alternative {Path(alternative.file).name}: {verdict}")
    return "\n".join(lines)


def render_mutant(mutant) -> str:
    diff = mutant.diff.splitlines()
    shown = diff[:DIFF_LINES_SHOWN] + ([f"  ... {len(diff) - DIFF_LINES_SHOWN} more lines"] if len(diff) > DIFF_LINES_SHOWN else [])
    body = "\n".join(f"      {line}" for line in shown)
    return f"  {mutant.id}  (line {mutant.line}, in {mutant.function})\n{body}"


def explain_one(kata: Kata, mutant_id: str, *, seed: int = DEFAULT_SEED, say: Callable[[str], None] = print) -> int:
    """`--mutant ID`: run one mutant on every check (the learner profile, then the deep one if it passes) and
    say which checks kill it and with what message."""
    from checker.author.oracle import Job, Oracle, Target

    _require_tool()
    mutants = list_mutants(kata)
    matches = [m for m in mutants if m.id == mutant_id] or [m for m in mutants if m.id.startswith(mutant_id)]
    if len(matches) != 1:
        known = "; ".join(m.id for m in mutants if mutant_id.split("@")[0] in m.id)[:600]
        raise MutateError(f"{'no' if not matches else len(matches)} mutants of kata {kata.number} match {mutant_id!r}"
                          f"{' (see --list)' if not known else ': ' + known}")
    mutant = matches[0]
    say(render_mutant(mutant))
    if mutant.kind != "mutant":
        say(f"  {mutant.kind}: {mutant.note or 'the source does not change'}; it is never run")
        return 0
    with Oracle(Target.of(kata), seed=seed) as oracle:
        for profile in ("learner", "deep"):
            job = Job(mutant.id, source=mutant.source, profile=profile, stop_at_first=False, shrink=True, detail=True)
            verdict = next(oracle.run([job], time_limit=4 * kata.time_limit))
            if verdict.outcome in ("timeout", "crashed") or verdict.status == "import_error":
                say(f"  {profile} profile: {verdict.outcome} ({verdict.status}): {verdict.message}")
                return 0
            failing = [c for c in verdict.checks if c.status != "pass"]
            if failing:
                say(f"  killed in the {profile} profile by {len(failing)} of {len(verdict.checks)} checks:")
                for check in failing:
                    message = "\n".join(f"        {line}" for line in check.message.strip().splitlines()[:12])
                    say(f"    {check.id} ({check.status}):\n{message}")
                return 0
            say(f"  passes all {len(verdict.checks)} checks in the {profile} profile")
    say("  it survives: equivalent (write why in the report) or a missing check (add one, and a hand-written mutant)")
    return 0


def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)


def run_command(katas: list[Kata], *, jobs: int | None, mutant: str | None, listing: bool, write: bool,
                time_limit: float | None, hand: bool, hand_checker: bool = False, hand_only: bool = False) -> int:
    """What `python -m checker mutate` does; 0 when every kata ran (survivors or not), else 1."""
    jobs = jobs or default_jobs()
    if listing:
        _require_tool()
        for m in list_mutants(katas[0]):
            first = m.diff.splitlines()[-1] if m.diff else ""
            print(f"{m.id:<70} line {m.line:<4} {m.kind if m.kind != 'mutant' else '':<11} {first[:90]}")
        return 0
    if mutant is not None:
        return explain_one(katas[0], mutant)
    if hand_only:
        return _rescore_command(katas, jobs=jobs, write=write)
    for kata in katas:
        run = mutate(kata, jobs=jobs, time_limit=time_limit, hand=hand, hand_checker=hand_checker)
        print(summary(run))
        previous = load_report(kata)
        report = build_report(run, previous)
        path = relative(report_path(kata))
        if write:
            report_path(kata).write_text(report.to_toml(), encoding="utf-8")
            untriaged = len(report.untriaged())
            print(f"wrote {path}: {len(report.survivors)} survivors, {untriaged} still {report.survivors and 'UNTRIAGED' or 'to triage'}"
                  if untriaged else f"wrote {path}: {len(report.survivors)} survivors, every one triaged")
        else:
            problems = currency(kata)
            changed = _survivor_change(report, previous)
            if problems:
                print(f"{path} is not current ({'; '.join(problems)}): run `make mutate N={kata.number}` to rewrite it")
            elif changed:
                print(f"{path} names the current files, but {changed}: run `make mutate N={kata.number}`")
            else:
                print(f"{path} is current")
        print()
    return 0


def _rescore_command(katas: list[Kata], *, jobs: int, write: bool) -> int:
    for kata in katas:
        run = rescore_hand_written(kata, jobs=jobs)
        print("\n".join(summary(run).splitlines()[2:]))
        report = rescored_report(run, load_report(kata))
        if write:
            report_path(kata).write_text(report.to_toml(), encoding="utf-8")
            print(f"wrote {relative(report_path(kata))}: the hand-written mutants and alternatives scored again")
        print()
    return 0


def _survivor_change(new: Report, old: Report | None) -> str:
    """How this run's survivors differ from the report's, in words ("" when they are the same)."""
    if old is None:
        return "there is no report"
    now, then = {s.id for s in new.survivors}, {s.id for s in old.survivors}
    parts = []
    if now - then:
        parts.append(f"{len(now - then)} survivors are new")
    if then - now:
        parts.append(f"{len(then - now)} of its survivors are now killed")
    return " and ".join(parts)
