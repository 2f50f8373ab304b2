"""Mistake: "integer work is a node that *makes* an integer or bool tensor". A mul of a float by a bool mask
(`h * (x[..., :1] > 0)`, as attention masks are applied) makes a float, so it joins the partition of the float ops
around it; NPU.compile refuses the partition's bool input, and every float op in it runs on the CPU (warned). The
lesson: "A supported op that reads or makes an integer or bool tensor ... stays on the CPU"."""
import torch

from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("integer_work_stays_on_the_host",)


def _makes_floats(node: torch.fx.Node) -> bool:
    return all(t.dtype.is_floating_point for t in _ref._values(node.meta.get("val")))


_ref.computes_on_floats = _makes_floats
