"""Alternative correct attempt: collects with a logging.Filter (keeps the record, returns False so nothing
reaches any handler), first in each logger's filters, with `disabled` cleared; puts level and disabled back and
removes the filter in finally; torch.cond / other rewrites for fixes."""
import logging
import re
from dataclasses import dataclass

import torch
import torch._dynamo


@dataclass(frozen=True)
class GraphBreak:
    filename: str
    lineno: int
    reason: str


class _Keep(logging.Filter):
    def __init__(self):
        super().__init__()
        self.messages = []

    def filter(self, record):
        self.messages.append(record.getMessage())
        return False


HEADER = re.compile(r"^Graph break in user code at (.+):(\d+)$", re.M)


def _reason(message):
    text = message.split("Graph Break Reason:", 1)[1]
    for para in re.split(r"\n\s*\n", text.strip()):
        lines = para.strip().splitlines()
        if len(lines) == 1 and lines[0].endswith(":"):
            continue
        return lines[0].strip()
    return ""


def find_graph_breaks(fn, *args, **kwargs):
    torch._dynamo.reset()
    keep = _Keep()
    loggers = [logging.getLogger(n) for n in list(logging.root.manager.loggerDict) if n.endswith(".__graph_breaks")]
    levels = [(lg.level, lg.disabled) for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
        lg.disabled = False
        lg.filters.insert(0, keep)  # before any filter of the user's, which might drop the record
    try:
        torch.compile(fn, backend="eager")(*args, **kwargs)
    finally:
        for lg, (level, disabled) in zip(loggers, levels):
            lg.removeFilter(keep)
            lg.setLevel(level)
            lg.disabled = disabled
    out, seen = [], set()
    for m in keep.messages:
        h = HEADER.search(m)  # full header only: the "suppressed" repeats are ignored
        if not h:
            continue
        key = (h[1], int(h[2]))
        if key in seen:
            continue
        seen.add(key)
        out.append(GraphBreak(h[1], int(h[2]), _reason(m)))
    return out


def fixed_scale_by_peak(x):
    return x / (x.abs().max() + 1e-6)


def fixed_chatty_mlp(x, w1, w2):
    return torch.relu(x @ w1) @ w2


def _divide(x, norm):
    return x / norm


def _keep_as_is(x, norm):
    return x.clone()


def fixed_clamp_norm(x):
    norm = x.norm()
    return torch.cond(norm > 1.0, _divide, _keep_as_is, (x, norm))


def fixed_horner(x, coeffs):
    result = torch.zeros_like(x)
    for i in range(coeffs.shape[0]):
        result = result * x + coeffs[i]
    return result


def fixed_standardize(x):
    return (x - x.mean()) / (x.std() + 1e-5)


def fixed_residual_tanh(x, w):
    return x + torch.tanh(x @ w)


def fixed_positive_mean(x):
    mask = x > 0
    return (x * mask).sum() / mask.sum()


def fixed_count_above(x, thresholds):
    return torch.stack([(x > t).sum() for t in thresholds])
