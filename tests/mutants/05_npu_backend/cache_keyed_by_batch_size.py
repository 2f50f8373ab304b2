"""Mistake: the program cache is keyed by the batch size alone. A call whose batch size was seen before but whose
other dimensions differ (a longer sequence) gets the program of the other shape: the NPU refuses the run, and
the call falls back to the CPU, loudly, every time."""
import torch

from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("every_dimension_is_part_of_the_signature", "int_arguments_are_part_of_the_signature",
             "real_models_keep_the_npu_busy_at_every_shape")


def signature(args):
    return tuple(a.shape[0] for a in args if isinstance(a, torch.Tensor))


_ref.signature = signature
