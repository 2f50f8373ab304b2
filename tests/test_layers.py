"""The layout is the architecture: which part of the checker may import which, and no import circles.

Each subpackage of checker/ names a side of the trust boundary or an audience (its `__init__` states its
contract). An import that goes upward (the worker importing the checks' side, the run importing a mentor's
tool) or round in a circle is a design change, and it fails here until the table below changes with it.
"""
from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

# part -> the parts it may import (besides itself). A part is a subpackage of checker/, one of its top-level
# modules, or a group of kata files.
MAY_IMPORT: dict[str, set[str]] = {
    "checker": set(),
    "checker.core": {"checker"},
    "checker.channel": {"checker.core", "checker"},
    "checker.attempt": {"checker.channel", "checker.core", "checker"},
    "checker.kit": {"checker.core", "checker"},
    "checker.trusted": {"checker.kit", "checker.attempt", "checker.channel", "checker.core", "checker"},
    "checker.run": {"checker.trusted", "checker.kit", "checker.attempt", "checker.channel", "checker.core",
                    "checker"},
    "checker.learner": {"checker.run", "checker.trusted", "checker.kit", "checker.attempt", "checker.channel",
                        "checker.core", "checker"},
    "checker.mentor": {"checker.learner", "checker.run", "checker.trusted", "checker.kit", "checker.attempt",
                       "checker.channel", "checker.core", "checker"},
    "checker.author": {"checker.run", "checker.trusted", "checker.kit", "checker.attempt", "checker.channel",
                       "checker.core", "checker"},
    "checker.cli": {"checker.*"},  # the front door: every command
    "checker.__main__": {"checker.cli"},
    # The simulated device and shared kata code are what the checker checks with: they never import it.
    "katas.common": set(),
    # A kata's hidden files are written with the kit (and the channel's graph descriptions for the device).
    "katas.hidden": {"checker.kit", "checker.channel", "checker.core"},
    # What a learner edits: plain PyTorch, nothing of the checker. A reference may load an earlier kata's reference
    # with the kit's load_reference (kata 5 builds on katas 3 and 4).
    "katas.stubs": set(),
    "solutions": {"checker.kit"},
}


# Shared kata code (models, captures, the simulated device) is the floor under everything.
for _part, _allowed in MAY_IMPORT.items():
    if _part != "katas.common":
        _allowed.add("katas.common")


def part_of(module: str) -> str | None:
    """The part of MAY_IMPORT that `module` (dotted, or a kata file's pseudo-name) belongs to."""
    if module.startswith("katas.common"):
        return "katas.common"
    if module.startswith("checker"):
        parts = module.split(".")
        return ".".join(parts[:2]) if len(parts) > 1 else "checker"
    return None


def file_module(root: Path, path: Path) -> tuple[str, str] | None:
    """(the module's dotted name, its part) for a file of the repository, or None for files no rule covers."""
    rel = path.relative_to(root)
    if rel.parts[0] == "checker" or rel.parts[:2] == ("katas", "common"):
        dotted = ".".join(rel.with_suffix("").parts)
        dotted = dotted.removesuffix(".__init__")
        return dotted, part_of(dotted)
    if rel.parts[0] == "katas" and len(rel.parts) >= 3:
        group = "katas.hidden" if "hidden" in rel.parts else "katas.stubs"
        return str(rel), group
    if rel.parts[0] == "solutions":
        return str(rel), "solutions"
    return None


def imports_of(path: Path) -> list[tuple[int, str]]:
    """Every checker or katas.common module the file imports, anywhere in it (a function-level import ties
    modules together as much as a top-level one), with its line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            # `from checker.channel import wire` imports the module checker.channel.wire (its package's __init__
            # runs first for any submodule, so it is no tie of its own); `from checker.kit import expect` imports
            # checker.kit
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.append((node.lineno, submodule if _is_module(path, submodule) else node.module))
    return [(line, name) for line, name in found if part_of(name) is not None]


def _is_module(path: Path, dotted: str) -> bool:
    root = next(p for p in path.parents if (p / "checker").is_dir())
    target = root.joinpath(*dotted.split("."))
    return target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()


def python_files(root: Path) -> list[Path]:
    return sorted(p for folder in ("checker", "katas", "solutions") for p in (root / folder).rglob("*.py"))


def upward_imports(root: Path) -> list[str]:
    """Each import a part's rule does not allow, as 'file:line: part imports module (part)'."""
    problems = []
    for path in python_files(root):
        placed = file_module(root, path)
        if placed is None:
            continue
        _, part = placed
        allowed = MAY_IMPORT[part]
        for line, name in imports_of(path):
            target = part_of(name)
            if target == part or "checker.*" in allowed and target.startswith("checker"):
                continue
            problem = f"{path.relative_to(root)}:{line}: {part} imports {name} ({target})"
            if target not in allowed and problem not in problems:
                problems.append(problem)
    return problems


def import_circles(root: Path) -> list[list[str]]:
    """Groups of checker and katas.common modules that import each other round a circle (Tarjan's strongly
    connected components of the module import graph; a package's __init__ counts as a module)."""
    graph: dict[str, set[str]] = {}
    for path in python_files(root):
        placed = file_module(root, path)
        if placed is None or placed[1] not in {*MAY_IMPORT} - {"katas.hidden", "katas.stubs", "solutions"}:
            continue
        graph[placed[0]] = set()
    for path in python_files(root):
        placed = file_module(root, path)
        if placed is None or placed[0] not in graph:
            continue
        graph[placed[0]] |= {name for _, name in imports_of(path) if name in graph and name != placed[0]}
    # a submodule's import runs its packages' __init__ first, but an __init__ that imports nothing closes no circle
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in graph[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return circles


def test_every_part_has_a_rule():
    unplaced = [str(p.relative_to(REPO_ROOT)) for p in python_files(REPO_ROOT)
                if (placed := file_module(REPO_ROOT, p)) and placed[1] not in MAY_IMPORT]
    assert not unplaced, f"modules in no part of the layout (add the part to MAY_IMPORT): {unplaced}"


def test_no_part_imports_upward_or_across_the_trust_boundary():
    problems = upward_imports(REPO_ROOT)
    assert not problems, "imports the layout does not allow:\n" + "\n".join(problems)


def test_no_import_circles():
    circles = import_circles(REPO_ROOT)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


@pytest.mark.parametrize("module, line", [
    ("checker/attempt/worker.py", "from checker.trusted.stand_ins import RemoteModule"),  # across the boundary
    ("checker/run/batch.py", "from checker.learner.backups import reset"),  # upward
    ("katas/common/npu/device.py", "from checker.channel.graphs import rebuild_graph"),  # shared code into the checker
    ("katas/01_dialects/dialects.py", "from checker.kit import expect"),  # the learner's file into the checker
])
def test_an_upward_import_fails_the_layer_test(tmp_path, module, line):
    copy = tmp_path / "repo"
    for folder in ("checker", "katas", "solutions"):
        shutil.copytree(REPO_ROOT / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / module
    target.write_text(target.read_text() + f"\n\ndef _added():\n    {line}\n")
    assert any(problem.startswith(module) for problem in upward_imports(copy)), line


def test_a_circle_fails_the_layer_test(tmp_path):
    copy = tmp_path / "repo"
    for folder in ("checker", "katas", "solutions"):
        shutil.copytree(REPO_ROOT / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = copy / "checker/core/manifest.py"
    manifest.write_text(manifest.read_text() + "\n\ndef _added():\n    from checker.core import cpu_time\n")
    cpu_time = copy / "checker/core/cpu_time.py"
    cpu_time.write_text(cpu_time.read_text() + "\n\ndef _added():\n    from checker.core import manifest\n")
    assert ["checker.core.cpu_time", "checker.core.manifest"] in import_circles(copy)
