"""Mistake: FixedDecayingHead decays by the default rate 0.9 whatever rate it was built with (the calls in the
table all use the defaults). DecayingHead(rate=0.5) returns proj(x) * 0.5 on its first call; this fix returns
proj(x) * 0.9. A fix keeps the suspect's constructor arguments, and honours them (README.md, 'Fix'). Blind round
2, wrong_rate_baked_in."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('fixes_keep_constructor_arguments',)


class FixedDecayingHead(_ref.FixedDecayingHead):
    def forward(self, x):
        self.calls += 1
        return self.proj(x) * 0.9 ** self.calls
