"""Mistake: "a size" means an integer: only SymInt and int values are shape arithmetic, so `b / 2` (a SymFloat),
`b > 1` (a SymBool) and their plain float and bool forms count as torch-level compute. Blind round 1's
wrong_symint_only.py: export with a Dim of `x * (x.shape[0] / 2)` reads as mixed instead of CORE_ATEN."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError

KILLED_BY = ("shape_arithmetic_is_neutral",)

# the reference's _is_structure reads the module-level SHAPE_VALUES: point it at the mistake
_ref.SHAPE_VALUES = (torch.SymInt, int)
node_dialect, detect_dialect = _ref.node_dialect, _ref.detect_dialect
