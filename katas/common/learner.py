"""Reuse your own solution of an earlier kata: `your_kata("04_op_support", "op_support.py")`.

Kata folders are not packages (their names start with digits), so they cannot be imported with `import`.
This loads `katas/<slug>/<module>` — the file you edited for that kata — as a module of its own.

The folder of katas is the one the calling file sits in: a mentor grading `submissions/alice/05_npu_backend/
backend.py` gets alice's `submissions/alice/03_fusion_guard/fusion.py`. Where the caller has no such sibling
(an attempt scored from elsewhere with --attempt), the repository's own `katas/` folder is used, except while
grading: in a working copy made by `checker grade` (it holds WORKING_COPY_MARK), or with
FX_KATAS_NO_REPO_FALLBACK=1, a missing file is a FileNotFoundError, never the grader's own file.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

KATAS_DIR = Path(__file__).resolve().parent.parent
WORKING_COPY_MARK = ".fx-katas-working-copy"  # in the top folder of a learner's copy made by `checker grade`
NO_FALLBACK_ENV = "FX_KATAS_NO_REPO_FALLBACK"


def _katas_folder_of_caller(depth: int) -> Path | None:
    caller = sys._getframe(depth).f_globals.get("__file__")
    return Path(caller).resolve().parent.parent if caller else None


def earlier_kata_file(caller_file: Path | str, slug: str, module: str) -> Path:
    """The file `your_kata(slug, module)` loads when called from `caller_file`, outside grading: the sibling
    `<slug>/<module>` beside the caller's kata folder if there is one, else the repository's own (what the
    checker names in its report, so a learner knows which file of an earlier kata ran)."""
    sibling = Path(caller_file).resolve().parent.parent / slug / module
    return sibling if sibling.is_file() else KATAS_DIR / slug / module


def your_kata(slug: str, module: str) -> ModuleType:
    """Your module `<katas folder>/<slug>/<module>` (e.g. "03_fusion_guard", "fusion.py"), freshly imported."""
    sibling_folder = _katas_folder_of_caller(2)
    path = sibling_folder / slug / module if sibling_folder else None
    if path is None or not path.is_file():
        grading = os.environ.get(NO_FALLBACK_ENV) == "1" or bool(
            sibling_folder and (sibling_folder / WORKING_COPY_MARK).is_file())
        if grading:
            raise FileNotFoundError(f"{slug}/{module} is not among the files being graded ({path}), and grading "
                                    f"never uses the grader's own katas/ folder instead: hand in your {module}")
        path = KATAS_DIR / slug / module
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: is {slug!r} the name of a kata folder?")
    name = f"your_kata_{slug}"
    spec = importlib.util.spec_from_file_location(name, path)
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[name] = loaded  # dataclasses and pickling look modules up by name
    spec.loader.exec_module(loaded)
    return loaded
