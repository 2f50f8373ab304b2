"""Mistake: the NPU computes in float32, float16 and bfloat16 only (katas/common/npu/device.py NPU_DTYPES), so a node
whose recorded tensor is float64 is not supported, whatever its op. is_node_supported looks at the op only:
dtypes are kata 5's concern (blind round 1, W05)."""
import torch

from checker.kit import load_reference
from katas.common.npu import NPU_DTYPES

_ref = load_reference("04_op_support", "op_support.py")


class NPUOperatorSupport(_ref.NPUOperatorSupport):
    def is_node_supported(self, submodules, node):
        value = node.meta.get("val", node.meta.get("example_value"))
        if isinstance(value, torch.Tensor) and value.dtype not in NPU_DTYPES:
            return False  # the wrong rule
        return super().is_node_supported(submodules, node)


_ref.NPUOperatorSupport = NPUOperatorSupport  # classify asks this one

KILLED_BY = (
    "generated_programs_agree_with_reference",
    "support_ignores_dtype",
)

canonical_op, classify = _ref.canonical_op, _ref.classify
