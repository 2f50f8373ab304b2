"""Mistake (blind round 2, wrong_freeze_by_grad_mode): "no_grad means inference", so npu_backend decides whether to
freeze from torch.is_grad_enabled() and hands one compiler to both of aot_autograd's roles. A model after
requires_grad_(False), called without torch.no_grad(), gets aot_autograd's inference graph, and its weights cross
to the NPU on every call."""
import functools

import torch
from torch._dynamo.backends.common import aot_autograd

from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")

KILLED_BY = ("weights_are_uploaded_once",)


def npu_backend(gm, example_inputs):
    compiler = functools.partial(_ref.compile_for_npu, freeze=not torch.is_grad_enabled())
    return aot_autograd(fw_compiler=compiler, inference_compiler=compiler)(gm, example_inputs)


_ref.npu_backend = npu_backend
_ref.register()
