"""Mistake: an op is the NPU's when its printed name starts with aten or kata (`str(target).startswith(("aten",
"kata"))`), the hurried form of comparing the namespace. A user's custom op `katalib::gelu` then counts as "gelu".
Breaks "the packet's name, if its namespace is aten or kata ... A custom op in any other namespace ... is None
whatever it is called" (README.md, 'What a node becomes'; blind round 3, wrong_18)."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")


def _overload_op(target):
    text = str(target)
    return text.split(".")[1] if text.startswith(_ref.NPU_NAMESPACES) else None  # the wrong rule


_ref._overload_op = _overload_op

KILLED_BY = ("custom_ops_of_other_namespaces_stay_on_cpu",)

canonical_op, NPUOperatorSupport, classify = _ref.canonical_op, _ref.NPUOperatorSupport, _ref.classify
