"""Mistake: a call_module node is resolved from its target, the attribute name, instead of the module's
type. The names in the MLP example (fc1 -> Linear, act -> GELU) make it look right; `proj`, `head`,
`block.0` (Linears) miss, and an `act` that is a LayerNorm or Softmax goes to the NPU."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_right_canonical_op = _ref.canonical_op

KILLED_BY = (
    'generated_programs_agree_with_reference',
    'in_place_forms_are_not_their_functional_op',
    'module_graphs_send_cpu_ops_to_cpu',
    'module_random_mlps_agree_with_reference',
    'module_subclasses_count_only_with_their_base_forward',
    'modules_resolve_by_type_not_attribute_name',
    'one_support_answers_each_node_as_it_is_now',
    'partitions_match_reference_on_zoo',
    'support_ignores_dtype',
)

NAME_HINTS = {"fc": "linear", "linear": "linear", "act": "gelu", "gelu": "gelu", "relu": "relu",
              "sigmoid": "sigmoid", "tanh": "tanh", "silu": "silu", "norm": "layer_norm", "softmax": "softmax"}


def canonical_op(node, submodules):
    if node.op == "call_module":
        name = node.target.rsplit(".", 1)[-1].rstrip("0123456789")  # "fc1" -> "fc", "act0" -> "act"
        return NAME_HINTS.get(name)
    return _right_canonical_op(node, submodules)


_ref.canonical_op = canonical_op
NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
