"""Mistake (blind round 1, wrong_dynamo_config): "the NPU is shape-static, so ask Dynamo for static graphs": the
module sets torch._dynamo.config.automatic_dynamic_shapes = False when imported. That changes every torch.compile in
the user's process, and after recompile_limit (8) new shapes Dynamo runs the model in eager: the backend never sees
the 9th shape, so the NPU idles without a warning."""
import torch

from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = (
    "changed_weights_are_uploaded_again",
    "dynamo_config_left_alone",
    "int_arguments_are_part_of_the_signature",
    "new_batch_sizes_run_on_npu",
    "weight_changes_while_program_memory_fills",
)

torch._dynamo.config.automatic_dynamic_shapes = False
