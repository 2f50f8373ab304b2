"""Mistake (blind round k08-r6, w25_no_recompile): legalise edits gm.graph and returns without gm.recompile() ("the
graph is what counts"). gm.code, which gm(...) runs, is still the code of the graph before legalise; nothing reached
through lower notices, because delegate_to_npu recompiles. The lesson ends Step 2 with `gm.recompile()`."""
from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ("legalise_removes_aliases_and_reshapes",)


def legalise(gm):
    gm.recompile = lambda: None  # the reference's legalise, minus its last line
    try:
        return _ref_legalise(gm)
    finally:
        del gm.recompile


_ref_legalise = _ref.legalise

npu_decomposition_table, export_for_npu, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
