"""Mistake: torch._functorch.predispatch's functions (_add_batch_dim, _vmap_increment_nesting, _make_dual, ...) are
torch functions like any other, so torch-level: an export of torch.vmap, torch.func.jvp or a create_block_mask in
forward reads as mixed. Breaks the node table's row "functorch's transform bookkeeping: any function of the module
`torch._functorch.predispatch` ... | `None`". The reference before blind round 4."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError

KILLED_BY = ("functorch_bookkeeping_is_neutral",)

_ref.FUNCTORCH_BOOKKEEPING = "no such module"
node_dialect, detect_dialect = _ref.node_dialect, _ref.detect_dialect
