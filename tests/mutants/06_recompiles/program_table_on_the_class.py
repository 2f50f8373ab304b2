"""Mistake: the bucket -> program table lives on the class ("one program per bucket, ever"), so a second
BucketedNPU, serving another model, runs the first server's program for the same bucket and answers with the
first model. Each server keeps its own table (README.md, 'Buckets'). Blind round 2, wrong_programs_on_class."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('buckets_in_any_order', 'larger_batches_fall_back_loudly', 'one_program_per_bucket', 'random_models_and_batches', 'smallest_bucket_that_fits', 'two_servers_side_by_side')

_right_init = _ref.BucketedNPU.__init__
_shared = {}


def __init__(self, model, buckets=(1, 2, 4, 8)):
    _right_init(self, model, buckets)
    self.programs = _shared


_ref.BucketedNPU.__init__ = __init__
