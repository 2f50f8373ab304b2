"""What the katas share: graph capture in every dialect, the fused `kata::linear_gelu` op, random MLPs,
hand-picked models and the Hypothesis strategies.

Importing this package registers the custom op, so a graph that calls `torch.ops.kata.linear_gelu` runs.
"""
from katas.common import ops as _ops  # noqa: F401 - registers torch.ops.kata.linear_gelu
from katas.common.capture import CAPTURES, Captured, capture
from katas.common.models import LayerSpec, MLPSpec, build_mlp, describe, example_input

__all__ = ["CAPTURES", "Captured", "capture", "LayerSpec", "MLPSpec", "build_mlp", "describe", "example_input"]
