"""Mistake: the finder shortens the filename to its last component (os.path.basename). Two files of the same
name in different folders could not be told apart; GraphBreak.filename is the full path Dynamo prints."""
import os

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("break_before_any_op", "break_inside_helper", "breaks_in_two_files_in_order",
             "filename_as_dynamo_prints_it", "finds_breaks_past_users_settings", "frame_falls_back_entirely",
             "module_forward", "one_entry_per_line", "passes_keyword_arguments", "reason_is_dynamos_cause",
             "reports_file_and_line", "runs_fn_once", "same_line_in_two_files", "several_breaks_in_execution_order")


def find_graph_breaks(fn, *args, **kwargs):
    return [GraphBreak(os.path.basename(b.filename), b.lineno, b.reason)
            for b in _ref.find_graph_breaks(fn, *args, **kwargs)]
