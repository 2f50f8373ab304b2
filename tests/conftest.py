"""Self-tests for the repository: the checker, every kata's reference, stub and known-wrong attempts."""
from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from checker.manifest import load_katas

TESTS_DIR = Path(__file__).resolve().parent
MUTANTS_DIR = TESTS_DIR / "mutants"
ALTERNATIVES_DIR = TESTS_DIR / "alternatives"
ATTEMPTS_DIR = TESTS_DIR / "attempts"
KATAS = load_katas()


def kata_id(kata) -> str:
    return kata.slug


def mutant_files(kata) -> list[Path]:
    return sorted((MUTANTS_DIR / kata.slug).glob("*.py"))


def killed_by(mutant: Path) -> tuple[str, ...]:
    """The check ids a mutant names in its KILLED_BY constant (read without importing it)."""
    tree = ast.parse(mutant.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "KILLED_BY" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise AssertionError(f"{mutant}: a mutant must declare KILLED_BY = (check ids, ...)")


def all_mutants():
    return [pytest.param(kata, path, id=f"{kata.slug}/{path.stem}") for kata in KATAS for path in mutant_files(kata)]


def boundary_mutants():
    """The hand-written mutants `make test` scores with the real checker (worker process and all): the first of each
    kata, or every one with FX_KATAS_EVERY_MUTANT=1. Every one of them is also scored on every check by
    `make mutate`, and tests/test_mutation.py proves from its report that each fails exactly its KILLED_BY."""
    if os.environ.get("FX_KATAS_EVERY_MUTANT") == "1":
        return all_mutants()
    return [pytest.param(kata, files[0], id=f"{kata.slug}/{files[0].stem}")
            for kata in KATAS if (files := mutant_files(kata))]


def alternative_files(kata) -> list[Path]:
    """Correct attempts written differently from the reference: each must score full marks."""
    return sorted((ALTERNATIVES_DIR / kata.slug).glob("*.py"))


def all_alternatives():
    return [pytest.param(kata, path, id=f"{kata.slug}/{path.stem}") for kata in KATAS for path in alternative_files(kata)]
