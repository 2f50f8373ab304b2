"""Mistake (blind round 3, wrong_inplace_until_last_reader): the in-place filter's window runs from the Linear to the
GELU output's LAST reader, whether autograd records the pair or not. Lesson: the replacement goes before the FIRST
reader; when autograd records nothing for the pair, a write after that changes nothing and the pair must be fused."""
from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)


def _to_last_reader(match, graph):
    matched = {node for node in match.nodes_map.values() if node not in match.placeholder_nodes}
    readers = {user for node in match.returning_nodes for user in node.users}
    order = {node: i for i, node in enumerate(graph.nodes)}
    last = max(order[node] for node in readers)
    inside = False
    for node in graph.nodes:
        if order[node] >= last:
            return
        if node in matched:
            inside = True
        elif inside and node not in readers:
            yield node


def _no_write_to_last_reader(match, graph, pattern):
    inputs = _ref._views_of({node for node in match.placeholder_nodes if hasattr(node, "users")}, graph)
    window = (_ref._between_match_and_insertion(match, graph, to_the_end=True) if _ref._recorded_by_autograd(match)
              else _to_last_reader(match, graph))
    return not any(_ref._writes_in_place(node, inputs) for node in window)


_ref.FILTERS[_ref.FILTERS.index(_ref.no_in_place_write)] = _no_write_to_last_reader
