"""`python -m checker ...`: the command line learners, mentors and CI use."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from checker.kit import DEFAULT_SEED, FUZZ_PROFILES
from checker.manifest import ManifestError, get_kata, load_katas
from checker.report import display_path, render_text, use_colour
from checker.runner import run_kata, torch_version_problem


class UsageError(Exception):
    """A mistake in how the checker was called; printed as one line, never a traceback."""


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object (schema_version 1) instead of text")
    parser.add_argument("--verbose", "-v", action="store_true", help="show tracebacks, hidden-check detail and your prints")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed for the random-model checks (replays a counterexample)")
    parser.add_argument("--profile", choices=sorted(FUZZ_PROFILES), default=None,
                        help="how many random examples fuzz checks try (default: learner)")
    parser.add_argument("--any-torch", action="store_true", help="run even if the installed torch is not the pinned one")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m checker", description="fx-katas checker")
    sub = parser.add_subparsers(dest="command", required=True)

    kata = sub.add_parser("kata", help="score one kata")
    kata.add_argument("number", type=int, help="kata number (see `python -m checker list`)")
    target = kata.add_mutually_exclusive_group()
    target.add_argument("--attempt", type=Path, help="score this file instead of the kata's stub file")
    target.add_argument("--solution", action="store_true", help="score the reference solution")
    kata.add_argument("--check", action="append", default=[], metavar="ID", help="run only this check (repeatable)")
    kata.add_argument("--time-limit", type=float, default=None, help="seconds before the attempt is stopped")
    _add_run_options(kata)

    listing = sub.add_parser("list", help="list the katas")
    listing.add_argument("--markdown", action="store_true", help="print the README's table of katas")
    return parser


def cmd_kata(args: argparse.Namespace) -> int:
    kata = get_kata(args.number)
    attempt = kata.solution_path if args.solution else (args.attempt or kata.stub_path)
    if not attempt.is_file():
        raise UsageError(f"{attempt}: no such file")
    if attempt.suffix != ".py":
        raise UsageError(f"{attempt}: an attempt is a Python file ending in .py")
    result = run_kata(kata, attempt, seed=args.seed, only=tuple(args.check), time_limit=args.time_limit,
                      profile=args.profile)
    if args.check and not result.checks:
        known = "see the check ids with --json"
        raise UsageError(f"kata {kata.number} has no check named {', '.join(args.check)} ({known})")
    if args.json:
        print(json.dumps(result.to_json(verbose=args.verbose), indent=2))
    else:
        print(render_text(kata, result, verbose=args.verbose, colour=use_colour()))
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


COMMANDS = {"kata": cmd_kata, "list": cmd_list}


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
