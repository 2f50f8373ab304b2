"""`katas.common`, what every kata's checks import: its public names stay what they say they are."""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import katas.common


def test_no_submodule_shadows_a_public_name():
    # Importing katas.common.X rebinds the package attribute X to the submodule: a function exported under a
    # submodule's name would turn into a module for whichever check imports it after someone imported X.
    for info in pkgutil.iter_modules(katas.common.__path__):
        importlib.import_module(f"katas.common.{info.name}")
    shadowed = [name for name in katas.common.__all__ if isinstance(getattr(katas.common, name), ModuleType)]
    assert not shadowed, f"katas.common exports {shadowed}, but a submodule of that name replaced them"
