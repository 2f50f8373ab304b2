"""The manifest is the single list of katas: every entry has its files, and the README table matches it."""
from __future__ import annotations

import ast

import pytest

from checker.core.manifest import REPO_ROOT
from conftest import KATAS, kata_id


@pytest.mark.parametrize("kata", KATAS, ids=kata_id)
def test_kata_folder_has_lesson_hints_stub_checks_and_reference(kata):
    for path in (kata.lesson_path, kata.hints_path, kata.stub_path, kata.checks_path, kata.solution_path):
        assert path.is_file(), f"kata {kata.number}: missing {path.relative_to(REPO_ROOT)}"


@pytest.mark.parametrize("kata", KATAS, ids=kata_id)
def test_stub_and_reference_define_the_same_public_api(kata):
    def public_names(path):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                names.add(node.name)
        return names

    assert public_names(kata.stub_path) <= public_names(kata.solution_path)


@pytest.mark.parametrize("kata", KATAS, ids=kata_id)
def test_hints_come_in_tiers(kata):
    tiers = [line for line in kata.hints_path.read_text(encoding="utf-8").splitlines() if line.startswith("## ")]
    assert len(tiers) >= 3, f"{kata.hints_path}: write at least three '## Hint N' tiers"


def test_readme_table_is_the_manifest():
    from checker.cli import katas_table_markdown

    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert katas_table_markdown() in readme, "regenerate the table: python -m checker list --markdown"


@pytest.mark.parametrize("kata", KATAS, ids=kata_id)
def test_every_hidden_file_the_attempts_process_loads_is_in_worker_reads(kata):
    """A grading sandbox shows the attempt only the hidden files `worker_reads` names; a probe that loads another
    one works in `make kata` and fails every honest attempt under `checker grade`. Any string in a worker-read file
    that names a sibling hidden file counts as loading it."""
    hidden = kata.checks_path.parent
    siblings = {p.name for p in hidden.glob("*.py")}
    named: dict[str, str] = {}
    for name in kata.worker_reads:
        path = hidden / name
        if not path.is_file():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in siblings:
                named.setdefault(node.value, name)
    missing = {f: by for f, by in named.items() if f not in kata.worker_reads}
    assert not missing, (f"kata {kata.number}: " + "; ".join(f"{by} loads hidden/{f}" for f, by in missing.items())
                         + " — add it to worker_reads in katas/katas.toml")


@pytest.mark.parametrize("kata", KATAS, ids=kata_id)
def test_builds_on_names_exactly_the_katas_whose_files_the_stub_imports(kata):
    """`make progress`, the report's "Start here" and the stub's first lines tell the learner which katas come
    first from `builds_on`; the stub's `your_kata(slug, ...)` calls are what really loads them."""
    slugs = {k.slug: k.number for k in KATAS}
    imported = set()
    for node in ast.walk(ast.parse(kata.stub_path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "your_kata" and node.args:
            imported.add(slugs[node.args[0].value])
    assert imported == set(kata.builds_on), f"kata {kata.number}: builds_on = {sorted(imported)} in katas/katas.toml"
    for number in kata.builds_on:
        assert f"katas {' and '.join(map(str, kata.builds_on))}" in kata.stub_path.read_text(encoding="utf-8") \
            or f"kata {number}" in kata.stub_path.read_text(encoding="utf-8")
