"""Mistake (blind round 1, wrong_requires_grad_as_param): the parameters to freeze are "the inputs that require
grad", not the nn.Parameters. Under torch.no_grad() with parameters that require grad the two agree; after
`model.requires_grad_(False)`, the usual inference set-up, nothing is frozen and every call uploads the weights."""
import torch

from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("weight_changes_while_program_memory_fills", "weights_are_uploaded_once")

def frozen_positions(self, args):
    if not self.freeze:
        return set()
    current = [(i, a, a._version, a.data_ptr()) for i, a in enumerate(args)
               if isinstance(a, torch.Tensor) and a.requires_grad]
    same = len(current) == len(self.frozen) and all(
        i == j and a is b and version == old_version and ptr == old_ptr
        for (i, a, version, ptr), (j, b, old_version, old_ptr) in zip(current, self.frozen))
    if not same:
        _ref._forget(id(self), self.signatures)
        self.refused.clear()
        self.frozen = current
    return {i for i, *_ in current}


_ref.NPUPartition.frozen_positions = frozen_positions
