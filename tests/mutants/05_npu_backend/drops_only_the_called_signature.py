"""Mistake: frozen parameters are remembered per signature, and a changed weight drops only the program of the
signature being called. The answers are right (each signature compiles again when it is next called), but the
programs the other signatures froze with the old weight stay resident until they are called, if ever: after a
weight change the NPU's memory holds dead programs. The lesson: "When any differs, drop that partition's programs"."""
from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("changed_weights_are_uploaded_again", "weight_changes_while_program_memory_fills")


def frozen_positions(self, args):
    if not self.freeze:
        return set()
    current = [(i, a, a._version, a.data_ptr()) for i, a in enumerate(args) if isinstance(a, _ref.torch.nn.Parameter)]
    key = _ref.signature(args)
    seen = self.__dict__.setdefault("frozen_by_signature", {})
    old = seen.get(key)
    if old is not None and not (len(old) == len(current) and all(
            i == j and a is b and v == w and p == q for (i, a, v, p), (j, b, w, q) in zip(old, current))):
        _ref.PROGRAMS.discard((id(self), key))  # only the program being called is stale, or so it seems
        self.signatures.discard(key)
    seen[key] = current
    return {i for i, *_ in current}


_ref.NPUPartition.frozen_positions = frozen_positions
