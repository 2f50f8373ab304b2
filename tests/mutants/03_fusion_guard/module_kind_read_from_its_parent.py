"""Mistake: a module subclass is its base's kind when its parent is the base and its own class body defines no
forward: the rule read one level deep. A subclass of a subclass that keeps the base's forward (KeepsKeepsGELU,
KeepsKeepsLinear), or assigns it back below an overriding parent (RestoresGELU, RestoresLinear), is left unfused
although it is a GELU (a Linear). The lesson: "`type(module).forward is nn.Linear.forward`" -- read through the
whole chain of bases (blind round k03-r5)."""
from pathlib import Path

from checker.kit import load_module

# the same patches of the reference as module_kind_read_from_its_own_class_body; only the kind rule differs
_patched = load_module(Path(__file__).with_name("module_kind_read_from_its_own_class_body.py"),
                       "kata03_mutant_module_kind_for_parent")

KILLED_BY = ("gelu_subclass_fuses_only_with_gelu_forward",)


def _keeps_forward(module, base):
    cls = type(module)
    return cls is base or (cls.__bases__[0] is base and "forward" not in cls.__dict__)


_patched._keeps_forward = _keeps_forward
fuse_linear_gelu = _patched.fuse_linear_gelu
unfused_pairs = _patched.unfused_pairs
