"""The mutants of a reference solution, made by cosmic-ray's operators (used as a library, in memory).

`python -m checker mutate K` hands each mutant to the oracle (checker/author/oracle.py); this module only makes them:
every occurrence of every selected operator in the source, each with an id that survives edits elsewhere in
the file, the function it lives in, and a compact diff a person reads.
"""
from __future__ import annotations

import ast
import difflib
import hashlib
import re
from dataclasses import dataclass
from functools import cache

TOOL = "cosmic-ray"
TOOL_VERSION = "8.7.0"  # pinned in pyproject.toml's `test` extra; the reports name it

# Operators of cosmic-ray's core provider left out, each with why. Everything else in `core/` is used.
EXCLUDED_OPERATORS: dict[str, str] = {
    r"core/Variable(Inserter|Replacer)":
        "needs a variable named per run, and inserts a random number or operator: the same source would give "
        "different mutants on every run, so no report could be reproduced",
    r"core/ReplaceComparisonOperator_(Eq|NotEq|Lt|LtE|Gt|GtE)_(Is|IsNot)":
        "value to identity comparison: on the enums, None, interned op names and small ints these solutions "
        "compare, `==` and `is` agree (equivalent mutants by the hundred), and elsewhere it only repeats what "
        "`==` -> `!=` or a flipped ordering already tests",
    r"core/ReplaceComparisonOperator_(Is|IsNot)_(Eq|NotEq|Lt|LtE|Gt|GtE)":
        "identity to value comparison: `x is None` and `x == None` agree on every object these solutions "
        "compare, and `is` -> `<` is a TypeError that only tests Python; `is` <-> `is not` stays",
}


def _excluded(name: str) -> bool:
    return any(re.fullmatch(pattern, name) for pattern in EXCLUDED_OPERATORS)


@cache
def selected_operators() -> tuple[str, ...]:
    """Every cosmic-ray core operator this project uses, sorted (operators that need arguments are left out)."""
    import cosmic_ray.plugins

    names = []
    for name in cosmic_ray.plugins.operator_names():
        if name.startswith("core/") and not _excluded(name) and not cosmic_ray.plugins.get_operator(name).arguments():
            names.append(name)
    return tuple(sorted(names))


def installed_tool_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cosmic_ray")
    except PackageNotFoundError:
        return None


@dataclass(frozen=True)
class Mutant:
    """One mutation of the solution source.

    `kind` is "mutant" (run it), "no_op" (the source did not change) or "incompetent" (it does not compile).
    """

    id: str
    operator: str
    occurrence: int  # cosmic-ray's index of this operator's positions in the file: shifts when code is edited
    line: int
    function: str
    diff: str
    source: str
    kind: str = "mutant"
    note: str = ""  # why it is incompetent


def _short_operator(name: str) -> str:
    return name.removeprefix("core/")


def _enclosing_functions(tree: ast.Module) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every def and class, outermost first."""
    spans: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                spans.append((first, child.end_lineno or child.lineno, name))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return spans


def function_at(spans: list[tuple[int, int, str]], line: int) -> str:
    """The innermost def or class holding `line`, or "<module>"."""
    found = "<module>"
    for first, last, name in spans:
        if first <= line <= last:
            found = name  # spans are outermost first, so the last match is the innermost
    return found


def annotation_spans(tree: ast.Module) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """((line, col), (end line, end col)) of every annotation: parameters, returns, annotated assignments.

    The solutions start with `from __future__ import annotations`, so annotations are strings nobody
    evaluates: `int | None` -> `int & None` cannot change behaviour. Mutants there are not made at all.
    """
    spans = []
    for node in ast.walk(tree):
        annotations = []
        if isinstance(node, ast.arg) and node.annotation is not None:
            annotations.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        for a in annotations:
            spans.append(((a.lineno, a.col_offset), (a.end_lineno, a.end_col_offset)))
    return spans


def _inside(position: tuple[int, int], spans) -> bool:
    return any(start <= position < end for start, end in spans)


def compact_diff(original: str, mutated: str, context: int = 0) -> tuple[str, int]:
    """The changed lines as `-`/`+` lines (with `context` unchanged lines around), and the first changed line."""
    before, after = original.splitlines(), mutated.splitlines()
    lines, first = [], 0
    for group in difflib.SequenceMatcher(None, before, after, autojunk=False).get_grouped_opcodes(context):
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [f"  {line.strip()}" for line in before[i1:i2]]
                continue
            if tag == "insert":
                first = first or i1 + 1
            removed = [(i1 + k + 1, line.strip()) for k, line in enumerate(before[i1:i2])]
            first = first or next((number for number, text in removed if text), 0)
            # a removed decorator takes the blank lines above it along: they say nothing
            lines += [f"- {text}" for _, text in removed if text]
            lines += [f"+ {line.strip()}" for line in after[j1:j2] if line.strip()]
    return "\n".join(lines), first


def stable_id(operator: str, function: str, diff: str) -> str:
    """An id that names the same mutant after unrelated edits: operator, function and the changed lines
    (not the occurrence number or the line number, which move whenever code above them changes)."""
    digest = hashlib.sha256(f"{operator}\n{function}\n{diff}".encode()).hexdigest()[:10]
    return f"{_short_operator(operator)}@{function}:{digest}"


def _occurrences(tree, operator_names):
    """cosmic-ray's enumeration (commands/init.py): for each operator, every position it reports in a walk of
    the parso tree; the n-th one is occurrence n. Yields (operator name, operator, occurrence, top-level
    statement index, occurrence within that statement, start)."""
    import cosmic_ray.plugins
    from cosmic_ray.ast import ast_nodes

    statements = [list(ast_nodes(child)) for child in tree.children]
    for name in operator_names:
        operator = cosmic_ray.plugins.get_operator(name)()
        occurrence = 0
        for index, nodes in enumerate(statements):
            local = 0
            for node in nodes:
                for start, _end in operator.mutation_positions(node):
                    yield name, operator, occurrence, index, local, start
                    occurrence += 1
                    local += 1


def _mutated_statement(pickled: bytes, operator, local: int) -> str | None:
    """The text of one top-level statement after cosmic-ray's MutationVisitor applied `operator` at its
    `local`-th position there, or None when there is no such position.

    This is what cosmic_ray.mutating.mutate_code(source, operator, occurrence) does, made cheaper: its visitor
    walks the parse tree in pre-order and mutates the occurrence-th position, so the positions inside one
    top-level statement are consecutive and the visitor can walk a copy of just that statement; the other
    statements keep their text. (Copying and walking the whole tree took 50 ms a mutant.)
    """
    import pickle

    from cosmic_ray.mutating import MutationVisitor

    visitor = MutationVisitor(local, operator)
    mutated = visitor.walk(pickle.loads(pickled))  # noqa: S301 - our own tree, pickled by generate()
    if not visitor.mutation_applied:
        return None
    return "" if mutated is None else mutated.get_code()


def _pickled_alone(node) -> bytes:
    """`node` pickled without its parent: parso nodes point up to the module, and pickling one would copy the
    whole tree. The positions operators report inside a top-level statement do not depend on the module above."""
    import pickle

    parent, node.parent = node.parent, None
    try:
        return pickle.dumps(node)
    finally:
        node.parent = parent


def generate(source: str, filename: str = "<solution>", operators: tuple[str, ...] | None = None) -> list[Mutant]:
    """Every mutant of `source`, in source order. Positions inside annotations are skipped (see annotation_spans)."""
    from cosmic_ray.ast import get_ast

    tree = ast.parse(source, filename)
    spans, skipped = _enclosing_functions(tree), annotation_spans(tree)
    parso_tree = get_ast(source)
    statements = [child.get_code() for child in parso_tree.children]
    first_lines = [1 + "".join(statements[:i]).count("\n") for i in range(len(statements))]
    pickled = [_pickled_alone(child) for child in parso_tree.children]
    mutants: list[Mutant] = []
    seen: dict[str, int] = {}
    for name, operator, occurrence, index, local, start in _occurrences(parso_tree, operators or selected_operators()):
        if _inside(start, skipped):
            continue
        statement = _mutated_statement(pickled[index], operator, local)
        if statement is None:
            continue
        function = function_at(spans, start[0])
        diff, first = compact_diff(statements[index], statement)
        line = first_lines[index] + first - 1 if first else start[0]
        mutant_id = stable_id(name, function, diff)
        seen[mutant_id] = seen.get(mutant_id, 0) + 1
        if seen[mutant_id] > 1:  # the same change to an identical line twice in one function
            mutant_id = f"{mutant_id}-{seen[mutant_id]}"
        kind, note = "mutant", ""
        if not diff:
            kind = "no_op"
        else:
            try:  # a top-level statement compiles on its own: no need to compile the whole file
                compile(statement, filename, "exec", dont_inherit=True)
            except SyntaxError as error:
                kind, note = "incompetent", f"SyntaxError: {error.msg}"
        mutated = "".join(statements[:index]) + statement + "".join(statements[index + 1:])
        mutants.append(Mutant(mutant_id, name, occurrence, line, function, diff, mutated, kind, note))
    return sorted(mutants, key=lambda m: (m.line, m.operator, m.occurrence))
