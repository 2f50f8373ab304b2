"""Mistake: layout ops (t, permute, transpose, view, reshape) cost no launch, the NPU folds them into the next
kernel (katas/common/npu/device.py LAYOUT_OPS), so they are always supported, even by a device whose NPU_OPS lacks them.
The device is the authority: every entry of NPU_OPS can be missing (blind round 1, W06)."""
from checker.kit import load_reference
from katas.common.npu import LAYOUT_OPS

_ref = load_reference("04_op_support", "op_support.py")


class NPUOperatorSupport(_ref.NPUOperatorSupport):
    def is_node_supported(self, submodules, node):
        if node.op in _ref.CALL_OPS and _ref.canonical_op(node, submodules) in LAYOUT_OPS:
            return True  # the wrong rule: hard-coded, whatever NPU_OPS says
        return super().is_node_supported(submodules, node)


_ref.NPUOperatorSupport = NPUOperatorSupport  # classify asks this one

KILLED_BY = ("npu_ops_is_read_from_katas_common",)

canonical_op, classify = _ref.canonical_op, _ref.classify
