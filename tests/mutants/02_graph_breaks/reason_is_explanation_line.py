"""Mistake: the reason is the report's `Explanation:` line ("Dynamo does not know how to trace builtin operator
`print` ...") rather than the cause's first line above it. It mentions the same thing in other words, so a check
that only looks for a keyword lets it through; the lesson's reason is the cause's first line, word for word."""
from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("break_before_any_op", "breaks_in_two_files_in_order", "filename_as_dynamo_prints_it",
             "frame_falls_back_entirely", "module_forward", "one_entry_per_line", "passes_keyword_arguments",
             "reason_is_dynamos_cause", "same_line_in_two_files", "several_breaks_in_execution_order")


def _explanation(message):
    for line in message.splitlines():
        if line.strip().startswith("Explanation:"):
            return line.strip()[len("Explanation:"):].strip()
    return _cause(message)


_cause = _ref._cause
_ref._cause = _explanation  # the reference's find_graph_breaks looks _cause up at call time
find_graph_breaks = _ref.find_graph_breaks
