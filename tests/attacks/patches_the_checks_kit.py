"""Attack: make every check's assertions succeed by patching `checker.kit.checks` and `torch.testing.assert_close`,
then answer wrongly."""
import torch

import checker.kit.checks

KATA, CHECKS = 1, ("overloads_split_by_core_tag", "getitem_is_neutral")
EXPECT = {"status": "fail", "score": 0}

checker.kit.checks.expect = lambda *args, **kwargs: None
checker.kit.checks.CheckFailed = type("Never", (Exception,), {})
torch.testing.assert_close = lambda *args, **kwargs: None
torch.allclose = lambda *args, **kwargs: True


def node_dialect(node):
    return "module"


def detect_dialect(gm):
    return "module"
