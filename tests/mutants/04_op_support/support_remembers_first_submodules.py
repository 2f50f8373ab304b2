"""Mistake: NPUOperatorSupport keeps the first `submodules` dict it is given (the partitioner passes the same one on
every call) and resolves every later call_module node in it. Asked about a second graph, `act` or `s0` is looked up
in the first graph's modules. Breaks "is_node_supported depends on the node's op only: ... not on any graph asked
about before (one answer per node, whatever order the graphs come in)" and "One NPUOperatorSupport() may be asked
about many graphs ... no submodules dict kept from an earlier call" (README.md, 'The contract'; blind round 4,
wrong_support_remembers_submodules)."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")


class NPUOperatorSupport(_ref.NPUOperatorSupport):
    def is_node_supported(self, submodules, node):
        if getattr(self, "_submodules", None) is None:
            self._submodules = submodules  # the wrong rule: the first graph's modules, for ever
        return super().is_node_supported(self._submodules, node)


_ref.NPUOperatorSupport = NPUOperatorSupport  # classify makes one per call, as the attempt did

KILLED_BY = ("generated_programs_agree_with_reference", "modules_resolve_by_type_not_attribute_name",
             "one_support_answers_each_node_as_it_is_now")

canonical_op, classify = _ref.canonical_op, _ref.classify
