"""Mistake: hunt.py adds `print` to torch._dynamo.config.reorderable_logging_functions at import (Dynamo's own
hint) and keeps the prints in fixed_chatty_mlp, which then compiles into one graph; the finder shields itself
by running under config.patch(reorderable_logging_functions=set()). Every compile in the importing process
changes. Blind round 2: wrong_reorderable_print_shielded.py, miss Q."""
import contextlib
import logging
import warnings

import torch
import torch._dynamo

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("fixed_chatty_mlp", "leaves_dynamo_config_alone")


torch._dynamo.config.reorderable_logging_functions.add(print)


def fixed_chatty_mlp(x, w1, w2):
    print(f"chatty_mlp: input of shape {tuple(x.shape)}")
    hidden = torch.relu(x @ w1)
    print("chatty_mlp: mean hidden activation", hidden.mean())
    return hidden @ w2


def find_graph_breaks(fn, *args, **kwargs):
    with torch._dynamo.config.patch(reorderable_logging_functions=set()):
        return _ref.find_graph_breaks(fn, *args, **kwargs)
