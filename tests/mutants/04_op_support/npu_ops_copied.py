"""Mistake: the NPU's op set is copied into the attempt instead of imported from katas.common.npu. It agrees
with the device today; when the device's NPU_OPS changes, the copy keeps sending work to kernels that are
not there."""
from torch.fx.passes.operator_support import OperatorSupportBase

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
canonical_op = _ref.canonical_op

KILLED_BY = ('generated_programs_agree_with_reference', 'npu_ops_is_read_from_katas_common')

MY_NPU_OPS = frozenset({"linear", "addmm", "mm", "matmul", "t", "permute", "transpose", "view", "reshape",
                        "gelu", "relu", "sigmoid", "tanh", "silu", "add", "mul", "linear_gelu"})


class NPUOperatorSupport(OperatorSupportBase):
    def is_node_supported(self, submodules, node):
        return node.op in _ref.CALL_OPS and canonical_op(node, submodules) in MY_NPU_OPS


def classify(gm):
    submodules = dict(gm.named_modules())
    support = NPUOperatorSupport()
    return {node.name: "npu" if support.is_node_supported(submodules, node) else "cpu"
            for node in gm.graph.nodes if node.op in _ref.CALL_OPS}
