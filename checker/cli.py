"""`python -m checker ...`: the command line learners, mentors and CI use."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from checker.core.manifest import ManifestError, display_path, get_kata, load_katas
from checker.core.stubs import remember_pristine
from checker.kit import DEFAULT_SEED, FUZZ_PROFILES
from checker.learner import backups
from checker.learner.hints import HintError, hint_text
from checker.learner.progress import examples_folder, fingerprint, hints_used, last_failing, record_result
from checker.run.report import render_text, terminal_columns, use_colour
from checker.run.runner import interactive_shards, run_kata, torch_version_problem


class UsageError(Exception):
    """A mistake in how the checker was called; printed as one line, never a traceback."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line (and exit 2) instead of the usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"checker: {message} (see `{self.prog} --help`)\n")


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object (schema_version 1) instead of text")
    parser.add_argument("--verbose", "-v", action="store_true", help="show tracebacks, hidden-check detail and your prints")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed for the random-model checks (replays a counterexample)")
    parser.add_argument("--profile", choices=sorted(FUZZ_PROFILES), default=None,
                        help="how many random examples fuzz checks try (default: learner)")
    parser.add_argument("--any-torch", action="store_true", help="run even if the installed torch is not the pinned one")


def _add_scoring_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed for the random-model checks")
    parser.add_argument("--profile", choices=sorted(FUZZ_PROFILES), default=None, help="fuzz profile (default: learner)")
    parser.add_argument("--any-torch", action="store_true", help="run even if the installed torch is not the pinned one")


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
    return value


def _jobs(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m checker", description="fx-katas checker")
    sub = parser.add_subparsers(dest="command", required=True)

    kata = sub.add_parser("kata", help="score one kata")
    kata.add_argument("number", type=int, help="kata number (see `python -m checker list`)")
    target = kata.add_mutually_exclusive_group()
    target.add_argument("--attempt", type=Path, help="score this file instead of the kata's stub file")
    target.add_argument("--solution", action="store_true", help="score the reference solution")
    kata.add_argument("--check", action="append", default=[], metavar="ID", help="run only this check (repeatable)")
    kata.add_argument("--time-limit", type=float, default=None,
                      help="CPU seconds before the attempt is stopped (default: the kata's own; 3x in wall-clock seconds stops it too)")
    _add_run_options(kata)

    listing = sub.add_parser("list", help="list the katas")
    listing.add_argument("--markdown", action="store_true", help="print the README's table of katas")

    hint = sub.add_parser("hint", help="show the next hint of a kata (`make hint N=k`)")
    hint.add_argument("number", type=int, help="kata number")
    which = hint.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true", help="re-read every hint shown so far")
    which.add_argument("--tier", type=int, metavar="K", help="re-read hint K (one already shown)")

    reset = sub.add_parser("reset", help="back up your attempt, then restore the pristine stub (`make reset N=k`)")
    reset.add_argument("number", type=int, nargs="?", help="kata number")

    restore = sub.add_parser("restore", help="list backups, or put one back (`make restore N=k BACKUP=name`)")
    restore.add_argument("number", nargs="?", help="kata number (omit to list every kata's backups)")
    restore.add_argument("backup", nargs="?", help="backup name (or a unique start of it, or `latest`)")

    watch = sub.add_parser("watch", help="re-run a kata's checks whenever its file is saved (`make watch N=k`)")
    watch.add_argument("number", type=int, help="kata number")
    watch.add_argument("--attempt", type=Path, help="watch this file instead of the kata's stub file")
    watch.add_argument("--check", action="append", default=[], metavar="ID", help="run only this check (repeatable)")
    watch.add_argument("--interval", type=_positive, default=0.5, help="seconds between looks at the file (0.5)")
    watch.add_argument("--debounce", type=_positive, default=0.3, help="seconds the file must be still before a run (0.3)")
    watch.add_argument("--time-limit", type=_positive, default=None, help="CPU seconds before the attempt is stopped")
    watch.add_argument("--verbose", "-v", action="store_true", help="show tracebacks, hidden-check detail and your prints")
    _add_scoring_options(watch)

    overview = sub.add_parser("all", aliases=["progress"], help="every kata's status, score and hints (`make progress`)")
    overview.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    overview.add_argument("--jobs", "-j", type=_jobs, default=None, help="katas run at once (default: CPU cores)")
    overview.add_argument("--fresh", action="store_true", help="re-run every kata, even unchanged ones")
    _add_scoring_options(overview)

    diff = sub.add_parser("diff", help="an attempt next to the reference: source diff and sample graphs (`make diff N=k`)")
    diff.add_argument("number", type=int, help="kata number")
    diff.add_argument("--attempt", type=Path, help="compare this file instead of the kata's stub file")
    diff.add_argument("--no-graphs", action="store_true", help="only the source diff")
    diff.add_argument("--time-limit", type=_positive, default=None, help="seconds the sample graphs may take")
    diff.add_argument("--width", type=int, default=None, help="columns for the side-by-side view (default: terminal)")
    diff.add_argument("--any-torch", action="store_true", help="run even if the installed torch is not the pinned one")

    graph = sub.add_parser("graph", help="pictures of a kata's sample graphs: as captured, after your code, after the "
                                          "reference (`make graph N=k`)")
    graph.add_argument("number", type=int, help="kata number")
    graph.add_argument("--attempt", type=Path, help="draw this file's graphs instead of the kata's stub file's")
    graph.add_argument("--capture", default=None, metavar="METHOD",
                       help="only this capture (symbolic_trace, dynamo, make_fx, export_core, ...)")
    graph.add_argument("--model", default=None, metavar="NAME", help="another sample model (katas 1 and 4: a zoo model)")
    graph.add_argument("--text", action="store_true", help="print the pictures as text too (for a terminal)")
    graph.add_argument("--out", type=Path, default=None, help="the HTML file to write (default: .kata-graphs/<kata>.html)")
    graph.add_argument("--time-limit", type=_positive, default=None, help="seconds drawing may take")
    graph.add_argument("--any-torch", action="store_true", help="run even if the installed torch is not the pinned one")

    grade = sub.add_parser("grade", help="grade many learners' folders: CSV gradebook, JSON per learner, Gradescope")
    grade.add_argument("dir", type=Path, metavar="DIR", help="one folder per learner, each laid out like katas/")
    grade.add_argument("--out", type=Path, default=None, help="where the results go (default: <DIR>-grades beside DIR)")
    grade.add_argument("--gradescope", action="store_true", help="also write Gradescope results.json")
    grade.add_argument("--jobs", "-j", type=_jobs, default=None, help="attempts run at once (default: CPU cores)")
    grade.add_argument("--time-limit", type=_positive, default=None, help="CPU seconds per attempt (default: each kata's)")
    grade.add_argument("--kata", type=int, action="append", default=[], metavar="N", help="grade only kata N (repeatable)")
    grade.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    grade.add_argument("--review-reference", action="store_true",
                       help="reviews also diff each learner's file against the reference (default: against the stub only)")
    grade.add_argument("--sandbox", choices=("auto", "namespace", "user", "none"), default="auto",
                       help="where attempts run: the strongest this machine allows (auto, the default), bubblewrap "
                            "namespaces, an unprivileged user per learner (root only), or none (see docs/guarantees.md)")
    _add_scoring_options(grade)

    warm = sub.add_parser("warm", help="the warm server that starts your runs in a fraction of a second: status, stop, start")
    warm.add_argument("action", nargs="?", choices=("status", "stop", "start"), default="status")

    bundle = sub.add_parser("gradescope-bundle", help="mentors: write autograder.zip for Gradescope (`make gradescope`)")
    bundle.add_argument("--kata", type=int, action="append", default=[], metavar="N",
                        help="a kata the assignment grades (repeatable; default: every kata)")
    bundle.add_argument("--time-limit", action="append", default=[], metavar="N=SECONDS",
                        help="kata N's time limit on Gradescope (repeatable; default: the kata's own)")
    bundle.add_argument("--visibility", default="visible", choices=("hidden", "after_due_date", "after_published", "visible"),
                        help="when learners see the results (default: visible)")
    bundle.add_argument("--check-visibility", action="append", default=[], metavar="N/CHECK_ID=VISIBILITY",
                        help="one check's own visibility, e.g. 3/random_mlps_as_torch_graphs=after_due_date (repeatable)")
    bundle.add_argument("--no-counterexamples", action="store_true",
                        help="do not show the shrunk random model of a failing random-example check")
    bundle.add_argument("--out", type=Path, default=Path("autograder.zip"), help="the zip to write (autograder.zip)")
    bundle.add_argument("--allow-dirty", action="store_true",
                        help="pack the working tree as it is, uncommitted changes in katas/ and solutions/ included "
                             "(default: the files committed at HEAD, refusing while katas/ or solutions/ have changes)")

    classroom = sub.add_parser("classroom-template", help="mentors: GitHub Classroom autograding files, one test per check")
    classroom.add_argument("--kata", type=int, action="append", default=[], metavar="N",
                           help="a kata the assignment grades (repeatable; default: every kata)")
    classroom.add_argument("--out", type=Path, default=Path("classroom-template"),
                           help="folder to write .github/... into (default: classroom-template/)")

    mutate = sub.add_parser("mutate", help="kata authors: mutation testing of a kata's hidden checks (`make mutate N=k`)")
    mutate.add_argument("number", type=int, nargs="?", help="kata number (omit for every kata, one after another)")
    mutate.add_argument("--jobs", "-j", type=_jobs, default=None, help="mutants run at once (default: CPU cores)")
    mutate.add_argument("--mutant", metavar="ID", default=None,
                        help="run one mutant (an id from --list or a report, or its unique start) on every check "
                             "and say which checks kill it, with their messages")
    mutate.add_argument("--list", action="store_true", help="list the mutants (id, line, change) without running them")
    mutate.add_argument("--write", action="store_true", help="write katas/NN_slug/hidden/mutation.toml (keeps reasons)")
    mutate.add_argument("--time-limit", type=_positive, default=None,
                        help="CPU seconds one mutant may run (default: twice the reference's run + 20 s)")
    mutate.add_argument("--no-hand", action="store_true", help="skip scoring the hand-written mutants (faster; no --write)")
    mutate.add_argument("--hand-only", action="store_true",
                        help="keep the report's mutant verdicts and score only tests/mutants/ and tests/alternatives/ "
                             "again (after a new hand-written mutant, a corrected KILLED_BY or a new alternative)")
    mutate.add_argument("--hand-checker", action="store_true",
                        help="score the hand-written mutants with `checker kata` itself (slower) instead of the oracle")
    mutate.add_argument("--any-torch", action="store_true", help="run even if the installed torch is not the pinned one")
    mutate.add_argument("--carry-renames", metavar="BASE", default=None,
                        help="after a move that only renames (see checker/author/renames.py): take the new digest of "
                             "each file that differs from its text at git revision BASE only by --renames")
    mutate.add_argument("--renames", metavar="FILE", type=Path, default=None,
                        help="`old -> new` per line, applied in order")
    mutate.add_argument("--carry-additions", metavar="BASE", default=None,
                        help="after additions to a file a kata only depends on (another kata's reference, a module "
                             "of katas/common; see checker/author/additions.py): take the new digest of each such "
                             "file that differs from its text at git revision BASE only by additions the kata never "
                             "names")
    return parser


def _is_stub(kata, attempt: Path) -> bool:
    try:
        return attempt.resolve() == kata.stub_path.resolve()
    except OSError:
        return False


def warm_launcher(*, wait: bool):
    """The learner's warm server (checker/run/warm.py), or None: then runs start cold. With `wait`, one is started
    and waited for when none answers (worth it for many runs, `checker all`); without, the run starts cold
    and `_score` starts the server after it, while the learner reads the report. Asked before every run, so
    a server that died or whose code changed is replaced."""
    from checker.run.warm import WarmUnavailable, learner_launcher

    try:
        return learner_launcher(wait=wait)
    except (WarmUnavailable, OSError):
        return None


def start_server_after_a_cold_run(launcher) -> None:
    """After a run that had no warm server (`launcher` None), start one in the background for the runs after it:
    after, not before, so its warming up does not compete with the cold run for the cores."""
    if launcher is None:
        from checker.run.warm import start_in_background

        start_in_background()


def _score(kata, attempt: Path, args: argparse.Namespace, live: "LiveReport | None" = None):
    """One interactive run of `attempt`, recorded in the progress file when it is the learner's own file and
    every check ran. UsageError when --check names no check of the kata. `live` shows failures as they come."""
    from checker.run.live import first_checks

    own_file = _is_stub(kata, attempt)
    if own_file:
        remember_pristine(kata)
    launcher = warm_launcher(wait=False)
    try:
        result = run_kata(kata, attempt, seed=args.seed, only=tuple(args.check), time_limit=args.time_limit,
                          profile=args.profile, shards=interactive_shards(), launcher=launcher,
                          examples=examples_folder(kata) if own_file else None,
                          first=first_checks(kata, last_failing(kata) if own_file else []), on_event=live)
    finally:
        if live is not None:
            live.close()
    start_server_after_a_cold_run(launcher)  # the first run of a session started cold; the next ones will not
    if args.check and not result.checks:
        raise UsageError(f"kata {kata.number} has no check named {', '.join(args.check)} (see the check ids with --json)")
    if own_file and not args.check:
        record_result(kata, result, fingerprint(kata, attempt, args.seed, args.profile), args.profile)
    return result


def _live_report(kata, args: argparse.Namespace, colour: bool) -> "LiveReport | None":
    """A live report on stdout when it is a terminal (checker/run/live.py); `_score` closes it when the run ends."""
    if not sys.stdout.isatty():
        return None
    from checker.run.live import LiveReport

    return LiveReport(kata, sys.stdout, colour=colour, columns=terminal_columns(), verbose=args.verbose)


def cmd_kata(args: argparse.Namespace) -> int:
    kata = get_kata(args.number)
    attempt = kata.solution_path if args.solution else (args.attempt or kata.stub_path)
    if not attempt.is_file():
        raise UsageError(f"{attempt}: no such file")
    if attempt.suffix != ".py":
        raise UsageError(f"{attempt}: an attempt is a Python file ending in .py")
    live = None if args.json else _live_report(kata, args, use_colour())
    result = _score(kata, attempt, args, live)
    if args.json:
        data = result.to_json(verbose=args.verbose)
        data["hints_used"] = hints_used(kata)
        print(json.dumps(data, indent=2))
    else:
        print(render_text(kata, result, verbose=args.verbose, colour=use_colour(), columns=terminal_columns(),
                          shown=frozenset(live.shown) if live else frozenset()))
    return 0 if result.status == "pass" else 1


def katas_table_markdown() -> str:
    """The README's table of katas, generated from the manifest."""
    rows = ["| # | kata | you edit |", "|---|------|----------|"]
    rows += [f"| {k.number} | [{k.title}](katas/{k.slug}/README.md) | `katas/{k.slug}/{k.module}` |" for k in load_katas()]
    return "\n".join(rows)


def cmd_list(args: argparse.Namespace) -> int:
    if args.markdown:
        print(katas_table_markdown())
        return 0
    for kata in load_katas():
        print(f"{kata.number:>2}  {kata.title:<52} {display_path(kata.stub_path)}")
    return 0


def cmd_hint(args: argparse.Namespace) -> int:
    kata = get_kata(args.number)
    remember_pristine(kata)
    try:
        print(hint_text(kata, show_all=args.all, tier=args.tier, colour=use_colour()))
    except HintError as exc:
        raise UsageError(str(exc)) from None
    return 0


def _need_number(args: argparse.Namespace, command: str) -> int:
    if args.number is None:
        known = ", ".join(str(k.number) for k in load_katas())
        raise UsageError(f"say which kata to {command}: `make {command} N=<kata>` (katas: {known})")
    return args.number


def cmd_reset(args: argparse.Namespace) -> int:
    kata = get_kata(_need_number(args, "reset"))
    try:
        print(backups.reset(kata))
    except backups.BackupError as exc:
        raise UsageError(str(exc)) from None
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    if args.number is None:
        print(backups.listing())
        return 0
    try:
        number = int(args.number)
    except ValueError:
        raise UsageError(f"restore takes a kata number first, not {args.number!r}: "
                         f"`make restore N=<kata> BACKUP=<name>`") from None
    kata = get_kata(number)
    try:
        print(backups.listing([kata]) if args.backup is None else backups.restore(kata, args.backup))
    except backups.BackupError as exc:
        raise UsageError(str(exc)) from None
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    from checker.learner.watch import watch

    kata = get_kata(args.number)
    attempt = args.attempt or kata.stub_path
    if attempt.suffix != ".py":
        raise UsageError(f"{attempt}: an attempt is a Python file ending in .py")
    if not attempt.parent.is_dir():
        raise UsageError(f"{attempt}: no such file")
    colour = use_colour()

    def run_once() -> str:
        live = _live_report(kata, args, colour)  # failures as they come, under the cleared screen's top line
        try:
            result = _score(kata, attempt, args, live)
        except UsageError as exc:
            return str(exc)
        return render_text(kata, result, verbose=args.verbose, colour=colour, columns=terminal_columns(),
                           shown=frozenset(live.shown) if live else frozenset(), compact=not args.verbose)

    return watch(attempt, run_once, interval=args.interval, debounce=args.debounce)


def cmd_all(args: argparse.Namespace) -> int:
    from checker.learner.overview import render, timed_collect

    rows, elapsed = timed_collect(jobs=args.jobs, seed=args.seed, profile=args.profile, fresh=args.fresh,
                                  launcher=warm_launcher(wait=True))
    if args.json:
        score, top = sum(r.score for r in rows), sum(r.max_score for r in rows)
        print(json.dumps({"schema_version": 1, "score": score, "max_score": top,
                          "passed": sum(r.status == "pass" for r in rows), "total": len(rows),
                          "katas": [r.to_json() for r in rows]}, indent=2))
    else:
        print(render(rows, colour=use_colour(), elapsed=elapsed))
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from checker.learner.diffing import run_sample, side_by_side, source_diff, terminal_width
    from checker.learner.progress import Progress

    kata = get_kata(args.number)
    attempt = args.attempt or kata.stub_path
    if not attempt.is_file():
        raise UsageError(f"{attempt}: no such file")
    colour = use_colour()
    if _is_stub(kata, attempt) and Progress.load().peek(kata).get("status") != "pass":
        print(f"(spoiler: this shows kata {kata.number}'s reference solution; your last run has not passed yet)")
    print(source_diff(attempt, kata.solution_path, colour=colour))
    if args.no_graphs:
        return 0
    sys.stdout.flush()
    print()
    launcher = warm_launcher(wait=False)
    sample = run_sample(kata, attempt, args.time_limit, launcher=launcher)
    start_server_after_a_cold_run(launcher)
    if isinstance(sample, str):
        print(f"({sample})")
        return 0
    print(f"Kata {kata.number}'s sample, run through your attempt and through the reference "
          f"(| differs, < only yours, > only the reference's):")
    print(side_by_side(*sample, width=args.width or terminal_width(), colour=colour))
    print(f"\nThe same graphs as pictures: `make graph N={kata.number}` (writes {display_path(graph_page_path(kata))})")
    return 0


GRAPHS_DIR = Path(".kata-graphs")


def graph_page_path(kata) -> Path:
    from checker.core.manifest import REPO_ROOT

    return REPO_ROOT / GRAPHS_DIR / f"{kata.slug}.html"


def cmd_graph(args: argparse.Namespace) -> int:
    from checker.kit.pictures import Picture, differences, html_page, text_of
    from checker.learner.diffing import run_pictures

    kata = get_kata(args.number)
    attempt = args.attempt or kata.stub_path
    if not attempt.is_file():
        raise UsageError(f"{attempt}: no such file")
    launcher = warm_launcher(wait=False)
    panels = run_pictures(kata, attempt, args.time_limit, capture=args.capture, model=args.model, launcher=launcher)
    start_server_after_a_cold_run(launcher)
    if isinstance(panels, str):
        raise UsageError(panels)
    out = args.out or graph_page_path(kata)
    out.parent.mkdir(parents=True, exist_ok=True)
    intro = (f"Kata {kata.number}'s sample graphs, drawn from {display_path(attempt)} and the reference. "
             "Hover over a node for its full name and target.")
    out.write_text(html_page(f"Kata {kata.number} · {kata.title}", panels, intro), encoding="utf-8")
    for panel in panels:
        print(panel.title)
        for label, side in (("as captured", panel.before), ("your attempt", panel.attempt), ("reference", panel.reference)):
            if side is None:
                continue
            compared_to = panel.reference if side is panel.attempt else None
            if args.text:
                print(f" {label}: " + text_of(side, compared_to).replace("\n", "\n   "))
            elif isinstance(side, Picture):
                marked = sum(1 for n in side.nodes if n.note)
                on_npu = sum(1 for n in side.nodes if n.kind == "npu")
                where = f", {on_npu} on the NPU, {side.transfers} host<->device transfer(s)" if on_npu else ""
                differ = ""
                if isinstance(compared_to, Picture):
                    changed, missing = differences(side, compared_to)
                    differ = (f"; {len(changed) + len(missing)} node(s) differ from the reference"
                              if changed or missing else "; same graph as the reference")
                print(f"  {label:<13} {len(side.nodes)} nodes{where}" + (f", {marked} marked" if marked else "")
                      + (f"; {side.caption}" if side.caption else "") + differ)
            else:
                print(f"  {label:<13} {side}")
    print(f"\nPictures: {display_path(out)} (open it in a browser){'' if args.text else '; --text prints them here'}")
    return 0


def cmd_gradescope_bundle(args: argparse.Namespace) -> int:
    from checker.mentor.gradescope import AutograderConfig, BundleError, build_bundle

    known = {k.number: k for k in load_katas()}
    try:
        limits = {}
        for item in args.time_limit:
            number, _, seconds = item.partition("=")
            limits[str(int(number))] = float(seconds)
        visibility = dict(item.split("=", 1) for item in args.check_visibility)
    except ValueError:
        raise UsageError("--time-limit takes N=SECONDS and --check-visibility N/CHECK_ID=VISIBILITY") from None
    config = AutograderConfig(katas=list(dict.fromkeys(args.kata)) or sorted(known), time_limits=limits,
                              visibility=args.visibility, check_visibility=visibility,
                              counterexamples=not args.no_counterexamples)
    try:
        config.validate(known)
        _check_ids_exist(config, known)
    except BundleError as exc:
        raise UsageError(str(exc)) from None
    try:
        packed = build_bundle(args.out, config, allow_dirty=args.allow_dirty)
    except BundleError as exc:
        raise UsageError(str(exc)) from None
    if packed.from_head and packed.uncommitted:
        print(f"note: not in the bundle, because they are not committed: {', '.join(packed.uncommitted)}",
              file=sys.stderr)
    elif not packed.from_head:
        what = (f"uncommitted changes are in it: {', '.join(packed.uncommitted)}" if packed.uncommitted
                else "it has no uncommitted changes" if packed.checkout else "this is not a git checkout")
        print(f"WARNING: --allow-dirty: the bundle holds the WORKING TREE as it is, not the committed files; {what}. "
              f"Check the stubs listed below before uploading.", file=sys.stderr)
    size = packed.path.stat().st_size / 1e6
    print(f"wrote {display_path(packed.path)} ({size:.1f} MB): katas {', '.join(map(str, config.katas))}, results "
          f"{config.visibility}{', counterexamples hidden' if not config.counterexamples else ''}.\n"
          f"{packed.describe()}\n"
          f"Upload it as the assignment's autograder (Configure Autograder → Zip file upload). Learners submit their "
          f"kata file(s), their kata folders, or a zip of their clone.")
    return 0


def _check_ids_exist(config, known) -> None:
    """Every --check-visibility names a check the kata has (read from its hidden checks, nothing run)."""
    from checker.mentor.gradescope import BundleError
    from checker.run.batch import probe_plans

    wanted: dict[int, set[str]] = {}
    for key in config.check_visibility:
        number, _, check = key.partition("/")
        if not number.isdigit() or int(number) not in config.katas or not check:
            raise BundleError(f"--check-visibility {key}=…: expected N/CHECK_ID with N one of the bundle's katas")
        wanted.setdefault(int(number), set()).add(check)
    if not wanted:
        return
    plans = probe_plans([known[n] for n in wanted])
    for number, checks in wanted.items():
        plan = plans.get(known[number].slug)
        ids = {row[0] for row in plan} if isinstance(plan, list) else set()
        if checks - ids:
            raise BundleError(f"kata {number} has no check {sorted(checks - ids)[0]!r} (see its ids with "
                              f"`python -m checker kata {number} --json`)")


def cmd_classroom_template(args: argparse.Namespace) -> int:
    from checker.mentor.classroom import write_template

    katas = [get_kata(n) for n in dict.fromkeys(args.kata)] or list(load_katas())
    try:
        paths = write_template(args.out, katas)
    except RuntimeError as exc:
        raise UsageError(f"could not read the checks: {exc}") from None
    print("wrote " + " and ".join(display_path(p) for p in paths) + ".\nCopy the .github folder into the assignment's "
          "template repository; each push is then graded, one Classroom test per check, worth the check's points.")
    return 0


def cmd_grade(args: argparse.Namespace) -> int:
    from checker.mentor.grade import GradeError, grade

    katas = [get_kata(n) for n in dict.fromkeys(args.kata)] or list(load_katas())
    try:
        print(grade(args.dir, katas, out=args.out, gradescope=args.gradescope, jobs=args.jobs,
                    time_limit=args.time_limit, seed=args.seed, profile=args.profile, quiet=args.quiet,
                    sandbox_mode=args.sandbox, review_reference=args.review_reference))
    except (GradeError, RuntimeError) as exc:
        raise UsageError(str(exc)) from None
    return 0


def cmd_mutate(args: argparse.Namespace) -> int:
    from checker.author.mutate import MutateError, run_command

    if args.write and args.no_hand:
        raise UsageError("--write needs the hand-written mutants scored: drop --no-hand")
    if args.hand_only and (args.no_hand or args.mutant or args.list):
        raise UsageError("--hand-only scores the hand-written files only: drop --no-hand, --mutant and --list")
    if (args.mutant or args.list) and args.number is None:
        raise UsageError("say which kata: `python -m checker mutate N --mutant ID` (or --list)")
    katas = [get_kata(args.number)] if args.number is not None else list(load_katas())
    if args.carry_additions:
        from checker.author.additions import AdditionsError, run_command as carry_additions

        if args.carry_renames or args.renames:
            raise UsageError("--carry-additions and --carry-renames are separate runs: one kind of change at a time")
        try:
            return carry_additions(katas, args.carry_additions, write=args.write)
        except AdditionsError as exc:
            raise UsageError(str(exc)) from None
    if args.carry_renames or args.renames:
        from checker.author.renames import RenameError, run_command as carry_renames

        if not (args.carry_renames and args.renames):
            raise UsageError("--carry-renames BASE and --renames FILE go together")
        try:
            return carry_renames(katas, args.carry_renames, args.renames, write=args.write)
        except RenameError as exc:
            raise UsageError(str(exc)) from None
    try:
        return run_command(katas, jobs=args.jobs, mutant=args.mutant, listing=args.list, write=args.write,
                           time_limit=args.time_limit, hand=not args.no_hand, hand_checker=args.hand_checker,
                           hand_only=args.hand_only)
    except MutateError as exc:
        raise UsageError(str(exc)) from None


def cmd_warm(args: argparse.Namespace) -> int:
    from datetime import datetime

    from checker.run import warm

    try:
        where = warm.socket_path()
    except (warm.WarmUnavailable, OSError) as exc:
        raise UsageError(str(exc)) from None
    if args.action == "stop":
        print("warm server stopped" if warm.stop_server() else f"no warm server was running ({where})")
        return 0
    if args.action == "start":
        try:
            warm.learner_launcher(wait=True)
        except warm.WarmUnavailable as exc:
            raise UsageError(str(exc)) from None
    status = warm.server_status()
    if status is None:
        state = "off (FX_KATAS_WARM=0)" if not warm.enabled() else "not running; the next `make kata` starts it"
        print(f"warm server: {state}\n  socket: {where}")
        return 0
    started = datetime.fromtimestamp(status["started"]).strftime("%H:%M:%S")
    current = status.get("fingerprint") == warm.code_fingerprint(warm.server_env())
    print(f"warm server: running (pid {status['pid']}, since {started}, warmed up in {status['warm_seconds']} s)\n"
          f"  runs forked: {status['runs']}, running now: {status['running']}\n"
          f"  stops after {status['idle_seconds']:g} s without a run (FX_KATAS_WARM_IDLE), or with "
          f"`python -m checker warm stop`\n"
          f"  {'matches this checker and environment' if current else 'out of date: the next run replaces it'}\n"
          f"  socket: {where}")
    return 0


COMMANDS = {"kata": cmd_kata, "list": cmd_list, "hint": cmd_hint, "reset": cmd_reset, "restore": cmd_restore,
            "watch": cmd_watch, "all": cmd_all, "progress": cmd_all, "diff": cmd_diff, "grade": cmd_grade, "mutate": cmd_mutate, "graph": cmd_graph,
            "gradescope-bundle": cmd_gradescope_bundle, "classroom-template": cmd_classroom_template,
            "warm": cmd_warm}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not getattr(args, "any_torch", True) and (problem := torch_version_problem()):
        print(f"checker: {problem}", file=sys.stderr)
        return 2
    try:
        return COMMANDS[args.command](args)
    except (UsageError, ManifestError) as exc:
        print(f"checker: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `python -m checker diff 1 | head`: the reader left, nothing is wrong
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
