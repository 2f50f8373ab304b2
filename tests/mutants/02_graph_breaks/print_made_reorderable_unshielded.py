"""Mistake: hunt.py adds `print` to torch._dynamo.config.reorderable_logging_functions at import (Dynamo's own
hint) and keeps the prints in fixed_chatty_mlp; the finder runs with that config, so every print break
disappears from its lists too. Blind round 2: wrong_reorderable_print.py (caught, but the messages blamed the
finder; they now name the config change)."""
import contextlib
import logging
import warnings

import torch
import torch._dynamo

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("breaks_in_two_files_in_order", "fixed_chatty_mlp", "frame_falls_back_entirely",
             "leaves_dynamo_config_alone", "module_forward", "resets_dynamo_first", "runs_fn_once",
             "same_line_in_two_files", "several_breaks_in_execution_order")


torch._dynamo.config.reorderable_logging_functions.add(print)


def fixed_chatty_mlp(x, w1, w2):
    print(f"chatty_mlp: input of shape {tuple(x.shape)}")
    hidden = torch.relu(x @ w1)
    print("chatty_mlp: mean hidden activation", hidden.mean())
    return hidden @ w2


find_graph_breaks = _ref.find_graph_breaks
