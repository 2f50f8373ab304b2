"""Mistake: the reason is the literal first line after "Graph Break Reason:", which is often Dynamo's
wrapper ("Encountered graph break when attempting to trace CALL ...:") rather than the cause."""
from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("break_before_any_op", "breaks_in_two_files_in_order", "filename_as_dynamo_prints_it",
             "frame_falls_back_entirely", "module_forward", "one_entry_per_line", "passes_keyword_arguments",
             "reason_is_dynamos_cause", "same_line_in_two_files", "several_breaks_in_execution_order")


def _first_line(message):
    text = message.split("Graph Break Reason:", 1)[-1]
    return text.strip().splitlines()[0].strip()


_ref._cause = _first_line  # the reference's find_graph_breaks looks _cause up at call time
find_graph_breaks = _ref.find_graph_breaks
