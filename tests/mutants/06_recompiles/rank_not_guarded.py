"""Mistake: a graph is compared size by size over the dimensions both shapes have: a call of lower rank
fits a graph traced for a higher one."""
import torch

from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = (
    'changed_rank_makes_every_dimension_symbolic',
    'equal_sizes_share_a_symbol',
    'random_calls_automatic',
    'random_calls_dynamic',
    'random_reuses_and_recompiles_every_setting',
    'sizes_seen_changing_get_their_own_symbol',
    'static_graph_per_shape_dtype_and_int',
)


def _accepts(self, call):
    if call.dtype != self.dtype:
        return False
    if any(want is not None and want != got for want, got in zip(self.sizes, call.shape)):
        return False
    if any(want is None and got < _ref.MIN_SYMBOLIC_SIZE for want, got in zip(self.sizes, call.shape)):
        return False
    if any(len({call.shape[i] for i in group}) > 1 for group in self.equal):
        return False
    return self.n is None or self.n == call.n


_ref._Graph.accepts = _accepts
