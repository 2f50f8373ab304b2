"""Mistake (blind round k08-r6, w17_first_output_spec_only): after delegating, only the first output spec is named
after the graph's new output node ("a model returns one tensor"). `ep.module()` runs with stale output names, but
torch.export.save refuses the program (SpecViolationError) when an island has several outputs. The lesson: name "the
placeholders and outputs the graph has now, position by position"."""
from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ("random_programs_lower_and_match_eager", "saved_program_runs_in_a_fresh_process")


def _sync_signature(ep):
    graph = ep.graph_module.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    for spec, node in zip(ep.graph_signature.input_specs, placeholders):
        spec.arg.name = node.name
    ep.graph_signature.output_specs[0].arg.name = graph.output_node().args[0][0].name


_ref._sync_signature = _sync_signature

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
