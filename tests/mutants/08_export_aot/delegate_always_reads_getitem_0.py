"""Mistake (blind round 1, wrong_delegate_always_getitem0): every partition's users read getitem(run, 0), also a
partition with several outputs, whose users already index the call with getitem: they now index the first
output's rows. A model returning (Linear(a), z, a) from one NPU island breaks."""
import torch

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('lower_runs_each_npu_island_as_one_program', 'random_programs_lower_and_match_eager',
             'saved_program_runs_in_a_fresh_process')


def _delegate_partition(ep, gm, call):
    sub = gm.get_submodule(call.target)
    _ref._call_instead(gm, call, torch.ops.npu_aot.run_program.default, _ref.pack(sub), True)


_ref._delegate_partition = _delegate_partition

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
