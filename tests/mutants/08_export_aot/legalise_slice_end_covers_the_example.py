"""Mistake (blind round 5, wrong_slice_end_covers): a slice keeps everything when it starts at 0, steps by 1 and its
end reaches the size of its dimension, that size read with int() from the input's meta["val"]. On the batch that
size is the example's: `h[:3]` exported with 3 rows is slice(h, 0, 0, 3), judged full (3 >= int(s77) = 3) and
removed, so a batch of 7 keeps 7 rows instead of 3.
Lesson (Step 2): "so start 0, end `sys.maxsize`, step 1 is the test. A numeric end on the batch is never "the
whole": `h[:3]` exported with 3 rows is `slice(h, 0, 0, 3)` and keeps 3 rows of a batch of 7"."""
import sys

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('legalise_removes_aliases_and_reshapes', 'legalise_leaves_legal_graphs_alone')


def _is_full_slice(node):
    _, dim, start, end, step = (list(node.args) + [0, None, None, 1][len(node.args) - 1:])[:5]
    size = int(node.args[0].meta["val"].shape[dim])
    return start in (0, None) and (end is None or end >= min(size, sys.maxsize)) and step == 1


_ref._is_full_slice = _is_full_slice

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
