"""Mistake: the graph is lowered with make_fx under no_grad and run as it is, also under autograd. Inference is
right and fully on the NPU, but in training the output is cut off from the parameters: it does not require
grad, and loss.backward() has nothing to flow through."""
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")

KILLED_BY = (
    "every_dimension_is_part_of_the_signature",
    "gradients_match_eager",
    "int_arguments_are_part_of_the_signature",
    "real_models_keep_the_npu_busy_at_every_shape",
    "registered_as_kata_npu",
    "training_steps_match_eager",
)


def npu_backend(gm, example_inputs):
    with torch.no_grad():
        aten = make_fx(gm)(*example_inputs)
    boxed = _ref.compile_for_npu(aten, example_inputs, freeze=True)  # takes one list of arguments
    return lambda *args: boxed(list(args))
