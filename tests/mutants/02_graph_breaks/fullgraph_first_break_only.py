"""Mistake: the finder compiles with fullgraph=True and reports the error it raises. fullgraph=True
stops at the first break, so a function with several breaks shows only one."""
import torch
import torch._dynamo

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("reports_file_and_line", "reason_is_dynamos_cause", "passes_keyword_arguments",
             "frame_falls_back_entirely", "several_breaks_in_execution_order", "same_line_in_two_files",
             "resets_dynamo_first", "filename_as_dynamo_prints_it")


def find_graph_breaks(fn, *args, **kwargs):
    torch._dynamo.reset()
    try:
        torch.compile(fn, backend="eager", fullgraph=True)(*args, **kwargs)
    except torch._dynamo.exc.TorchDynamoException as exc:
        frame = exc.real_stack[-1]
        return [GraphBreak(frame.filename, frame.lineno, str(exc).strip().splitlines()[0])]
    return []
