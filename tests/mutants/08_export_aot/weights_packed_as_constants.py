"""Mistake carried over from kata 5, where an NPU program keeps its weights as constants copied once: each
partition's parameters are turned into get_attr constants of the partition before pack(), so the program carries
a copy of the weights. The parameters stay in the signature but nothing reads them: new weights change nothing."""
from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('saved_program_runs_in_a_fresh_process', 'weights_stay_inputs_of_the_program')
_delegate_partition = _ref._delegate_partition


def _with_weights_inside(ep, gm, call):
    """Replace the partition's parameter inputs with get_attr constants of its submodule."""
    sub = gm.get_submodule(call.target)
    params = ep.graph_signature.inputs_to_parameters
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    keep = []
    for arg, inner in zip(call.args, placeholders):
        if arg.name in params:
            name = "w_" + arg.name
            sub.register_buffer(name, ep.state_dict[params[arg.name]].detach().clone())
            with sub.graph.inserting_before(inner):
                constant = sub.graph.get_attr(name)
            inner.replace_all_uses_with(constant)
            sub.graph.erase_node(inner)
        else:
            keep.append(arg)
    sub.recompile()
    call.args = tuple(keep)
    _delegate_partition(ep, gm, call)


_ref._delegate_partition = _with_weights_inside

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
