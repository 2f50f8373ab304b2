"""Each kata's contract as a table of rules (katas/NN_slug/hidden/rules.toml), kept honest.

A rule quotes the lesson line that states it, names the axes along which an input can vary while the rule still
applies, and the checks that test it; each axis names the generator (a strategy of katas/common/strategies.py, or
of the kata's hidden folder) or the hand-built input list that varies it. `make test` fails when a rule quotes
text the lesson no longer says, names a check that does not exist, has no check, or an axis nothing varies.
No torch: the checks are read as source.
"""
from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

from checker.core.manifest import load_katas

KATAS = list(load_katas())
COMMON = Path(__file__).resolve().parent.parent / "katas" / "common"


def _normalised(text: str) -> str:
    """Lesson text as a reader sees it: markdown emphasis, code ticks and line breaks do not count."""
    return re.sub(r"\s+", " ", re.sub(r"[`*_>]", "", text)).strip().lower()


def _check_ids(checks_path: Path) -> set[str]:
    """Names of the functions registered with `@CHECKS.check(...)`."""
    found = set()
    for node in ast.walk(ast.parse(checks_path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                call = decorator.func if isinstance(decorator, ast.Call) else decorator
                if isinstance(call, ast.Attribute) and call.attr == "check":
                    found.add(node.name)
    return found


def _defined_names(paths: list[Path]) -> set[str]:
    names = set()
    for path in paths:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


# Katas whose table has not landed yet, and why; a kata listed here that has a table fails (take it off the list).
NO_TABLE_YET: dict[str, str] = {}


def _rules(kata) -> list[dict]:
    path = kata.folder / "hidden" / "rules.toml"
    if kata.slug in NO_TABLE_YET:
        assert not path.is_file(), f"{path} exists: take {kata.slug} off NO_TABLE_YET"
        pytest.skip(NO_TABLE_YET[kata.slug])
    if not path.is_file():
        pytest.fail(f"{path} is missing: write the kata's rules (see tests/test_rules.py)")
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert data.get("schema") == 1, f"{path}: schema = 1 expected"
    return data.get("rule", [])


@pytest.mark.parametrize("kata", KATAS, ids=lambda k: k.slug)
def test_every_rule_quotes_the_lesson_and_has_a_check_and_generated_axes(kata):
    rules = _rules(kata)
    assert rules, f"{kata.slug}: rules.toml lists no rule"
    lesson = _normalised(kata.lesson_path.read_text(encoding="utf-8") + "\n" +
                         kata.hints_path.read_text(encoding="utf-8"))
    checks = _check_ids(kata.checks_path)
    generators = _defined_names([COMMON / "strategies.py", *sorted((kata.folder / "hidden").glob("*.py"))])
    ids = [r.get("id") for r in rules]
    assert len(set(ids)) == len(ids), f"{kata.slug}: rule ids repeat"
    problems = []
    for rule in rules:
        rid = rule.get("id", "?")
        quote = rule.get("lesson", "")
        if not quote or _normalised(quote) not in lesson:
            problems.append(f"{rid}: the lesson does not say {quote!r} (quote it as written, emphasis aside)")
        named = rule.get("checks", [])
        if not named:
            problems.append(f"{rid}: no check tests it")
        problems += [f"{rid}: no check named {c!r} in {kata.checks_path.name}" for c in named if c not in checks]
        axes = rule.get("axes", {})
        if not isinstance(axes, dict) or not axes:
            problems.append(f"{rid}: no axes (name what an input varies along while the rule applies)")
            continue
        for axis, by in axes.items():
            if by not in generators:
                problems.append(f"{rid}: axis {axis!r} is varied by {by!r}, which neither katas/common/strategies.py "
                                f"nor the kata's hidden folder defines")
    assert not problems, f"{kata.slug}:\n" + "\n".join(problems)


@pytest.mark.parametrize("kata", KATAS, ids=lambda k: k.slug)
def test_every_kata_records_its_blind_rounds(kata):
    """hidden/blind_rounds.md: each round's date, attempts, misses and what was added."""
    path = kata.folder / "hidden" / "blind_rounds.md"
    assert path.is_file(), f"{path} is missing"
    text = path.read_text(encoding="utf-8")
    assert re.search(r"^## Round \d+ · \d{4}-\d{2}-\d{2}", text, re.M), f"{path}: no '## Round N · YYYY-MM-DD' heading"
