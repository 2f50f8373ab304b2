"""Mistake: the finder compiles with fullgraph=True and reports the error it raises. fullgraph=True
stops at the first break, so a function with several breaks shows only one."""
import torch
import torch._dynamo

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("breaks_in_two_files_in_order", "filename_as_dynamo_prints_it", "frame_falls_back_entirely",
             "one_entry_per_line", "passes_keyword_arguments", "reason_is_dynamos_cause", "reports_file_and_line",
             "resets_dynamo_first", "runs_fn_once", "same_line_in_two_files", "several_breaks_in_execution_order")


def find_graph_breaks(fn, *args, **kwargs):
    torch._dynamo.reset()
    try:
        torch.compile(fn, backend="eager", fullgraph=True)(*args, **kwargs)
    except torch._dynamo.exc.TorchDynamoException as exc:
        frame = exc.real_stack[-1]
        return [GraphBreak(frame.filename, frame.lineno, str(exc).strip().splitlines()[0])]
    return []
