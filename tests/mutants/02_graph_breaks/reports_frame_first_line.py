"""Mistake: the finder reports the first line of the frame that broke (its `def`, co_firstlineno)
instead of the line Dynamo broke at."""
import ast
from pathlib import Path

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("break_before_any_op", "break_inside_helper", "breaks_in_two_files_in_order",
             "filename_as_dynamo_prints_it", "finds_breaks_past_users_settings", "frame_falls_back_entirely",
             "module_forward", "one_entry_per_line", "passes_keyword_arguments", "reason_is_dynamos_cause",
             "reports_file_and_line", "resets_dynamo_first", "runs_fn_once", "same_line_in_two_files",
             "several_breaks_in_execution_order")


def _frame_first_line(filename, lineno):
    tree = ast.parse(Path(filename).read_text())
    starts = [node.lineno for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
              and node.lineno <= lineno <= node.end_lineno]
    return max(starts) if starts else lineno


def find_graph_breaks(fn, *args, **kwargs):
    return [GraphBreak(b.filename, _frame_first_line(b.filename, b.lineno), b.reason)
            for b in _ref.find_graph_breaks(fn, *args, **kwargs)]
