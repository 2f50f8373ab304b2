"""Tiered hints: `python -m checker hint N` reveals the next `## Hint k` section of the kata's hints.md.

How many tiers a learner has seen is kept in the progress file (checker/learner/progress.py); `--all` re-reads the
ones already shown and `--tier K` one of them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from checker.core.manifest import Kata, display_path
from checker.learner.progress import Progress, now
from checker.run.report import _Style


class HintError(Exception):
    """A hint request that cannot be served (one line for the learner)."""


@dataclass(frozen=True)
class Hint:
    number: int
    heading: str  # the heading text after "## "
    body: str


_HINT_HEADING = re.compile(r"^hint\s+\d+\s*[:.—–-]?\s*", re.IGNORECASE)


def parse_hints(text: str) -> list[Hint]:
    """Every `## ` section, in order (headings inside ``` fences do not count). Text before the first is ignored."""
    sections: list[tuple[str, list[str]]] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif sections:
            sections[-1][1].append(line)
    return [Hint(i + 1, heading, "\n".join(body).strip()) for i, (heading, body) in enumerate(sections)]


def load_hints(kata: Kata) -> list[Hint]:
    try:
        text = kata.hints_path.read_text(encoding="utf-8")
    except OSError:
        raise HintError(f"kata {kata.number} has no hints file ({display_path(kata.hints_path)})") from None
    hints = parse_hints(text)
    if not hints:
        raise HintError(f"{display_path(kata.hints_path)} has no '## Hint 1' section")
    return hints


def _render(kata: Kata, hint: Hint, total: int, style: _Style) -> list[str]:
    title = style(f"Kata {kata.number} · hint {hint.number} of {total}", "1")
    subtitle = _HINT_HEADING.sub("", hint.heading).strip()
    return [title + (f" — {subtitle}" if subtitle else ""), "", hint.body, ""]


def hint_text(kata: Kata, *, show_all: bool = False, tier: int | None = None, colour: bool = False) -> str:
    """What `checker hint` prints; reveals (and records) the next tier unless --all or --tier is given."""
    style = _Style(colour)
    hints = load_hints(kata)
    total = len(hints)
    progress = Progress.load()
    used = min(progress.hints_used(kata), total)
    reread = f"`python -m checker hint {kata.number} --all`"
    if show_all:
        if used == 0:
            return f"No hints shown yet for kata {kata.number}: `make hint N={kata.number}` shows the first."
        out = [line for hint in hints[:used] for line in _render(kata, hint, total, style)]
        more = f"`make hint N={kata.number}` shows hint {used + 1}." if used < total else "That is every hint."
        return "\n".join(out + [f"({used} of {total} hints shown. {more})"])
    if tier is not None:
        if not 1 <= tier <= total:
            raise HintError(f"kata {kata.number} has hints 1 to {total}, not {tier}")
        if tier > used:
            raise HintError(f"hint {tier} of kata {kata.number} is not shown yet; hints come in order: "
                            f"`make hint N={kata.number}` shows hint {used + 1}")
        return "\n".join(_render(kata, hints[tier - 1], total, style)).rstrip()
    if used >= total:
        return (f"All {total} hints for kata {kata.number} are shown already. Re-read them: {reread} "
                f"(just one: `python -m checker hint {kata.number} --tier K`). Still stuck? Re-read "
                f"{display_path(kata.lesson_path)} and run `make kata N={kata.number} ARGS=--verbose`.")
    hint = hints[used]
    rec = progress.record(kata)
    rec["hints_used"] = hint.number
    rec["hint_last_shown"] = now()
    progress.save()
    if hint.number == total:
        footer = f"(That was the last hint, {total} of {total}. Re-read them all: {reread}.)"
    else:
        footer = (f"({hint.number} of {total} hints shown. Next: `make hint N={kata.number}`; "
                  f"re-read: {reread}.)")
    return "\n".join(_render(kata, hint, total, style) + [footer])
