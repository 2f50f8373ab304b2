"""Kata files as modules: a kata folder is not an importable package, so its files are loaded by path.

Every process of the checker (checks, worker, mutation oracle, sample process) loads kata files through
`load_module`, which also remembers which file each such module came from: the channel (checker/channel/wire.py)
sends a function of a file-loaded module to the worker as "load this file, take this attribute".
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

# module name -> the file it was loaded from, for every module `load_module` loaded in this process
LOADED_FROM_FILES: dict[str, str] = {}


def load_module(path: Path, name: str) -> ModuleType:
    """Import the file at `path` as module `name` (kata folders are not importable packages)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    LOADED_FROM_FILES[name] = str(Path(path).resolve())
    spec.loader.exec_module(module)
    return module
