"""Reuse your own solution of an earlier kata: `your_kata("04_op_support", "op_support.py")`.

Kata folders are not packages (their names start with digits), so they cannot be imported with `import`.
This loads `katas/<slug>/<module>` — the file you edited for that kata — as a module of its own.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

KATAS_DIR = Path(__file__).resolve().parent.parent


def your_kata(slug: str, module: str) -> ModuleType:
    """Your module `katas/<slug>/<module>` (e.g. "03_fusion_guard", "fusion.py"), freshly imported."""
    path = KATAS_DIR / slug / module
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: is {slug!r} the name of a kata folder?")
    name = f"your_kata_{slug}"
    spec = importlib.util.spec_from_file_location(name, path)
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[name] = loaded  # dataclasses and pickling look modules up by name
    spec.loader.exec_module(loaded)
    return loaded
