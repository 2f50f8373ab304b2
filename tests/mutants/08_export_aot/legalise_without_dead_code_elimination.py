"""Mistake (blind round 1, wrong_legalise_no_dce): legalise rewrites the views but never calls
gm.graph.eliminate_dead_code(): the sym_size nodes the old views read stay in the graph, read by nothing."""
import torch.fx

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('legalise_removes_aliases_and_reshapes',
    'lower_runs_each_npu_island_as_one_program',
    'random_programs_lower_and_match_eager')
_keep = torch.fx.Graph.eliminate_dead_code


def legalise(gm):
    gm.graph.eliminate_dead_code = lambda *args, **kwargs: False
    try:
        return _ref_legalise(gm)
    finally:
        del gm.graph.eliminate_dead_code


_ref_legalise = _ref.legalise
_ref.legalise = legalise

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
