"""Mistake: the written-out GELU's steps are matched as Python's `*`, `+` and `torch.tanh` (as symbolic_trace and
Dynamo record transformers' gelu_new) or their ATen ops; `torch.mul` / `torch.add` and the Tensor methods
`.mul` / `.add` / `.tanh` are missed. The lesson: "spelled as the capture spells them: Python's `*` and `+`
(`operator.mul`, `operator.add`), `torch.mul`, `torch.add`, `torch.tanh`, the Tensor methods `.mul`, `.add`, `.tanh`,
or `aten.mul.Tensor`, ...".
"""
import operator

import torch

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
aten = torch.ops.aten
_ref.MULTIPLIES = {operator.mul, aten.mul.Tensor}
_ref.ADDS = {operator.add, aten.add.Tensor}
_ref.TANHS = {torch.tanh, aten.tanh.default}
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs

KILLED_BY = ("report_finds_the_written_out_gelu_in_every_spelling",)
