"""Mistake: the parameters are frozen into the programs, and never looked at again. After an in-place change
(an optimizer step, load_state_dict, a manual edit under no_grad) the NPU keeps computing with its old copy:
wrong answers, no warning."""
import torch

from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = (
    "changed_weights_are_uploaded_again",
    "replaced_parameter_data_is_uploaded_again",
    "weight_changes_while_program_memory_fills",
)


def frozen_positions(self, args):
    if not self.freeze:
        return set()
    return {i for i, a in enumerate(args) if isinstance(a, torch.nn.Parameter)}


_ref.NPUPartition.frozen_positions = frozen_positions
