"""Attack: run everything on the CPU, but make the NPU's counters in this process say every op ran on the NPU
(a fake `DEVICE.stats` full of runs, launches and nodes, and `DEVICE.busy` stuck on so no host op is counted)."""
from collections import Counter

import torch
from torch._dynamo import register_backend

from katas.common import npu

KATA, CHECKS = 5, ("supported_models_run_entirely_on_npu",)
EXPECT = {"status": "fail", "score": 0, "message": "NPU"}


class ForgedDevice(type(npu.DEVICE)):
    busy = property(lambda self: True, lambda self, value: None)

    @property
    def stats(self):
        ops = Counter({op: 1 for op in npu.NPU_OPS})
        return npu.NPUStats(programs_compiled=1, runs=1, launches=1, ops_run=ops,
                            nodes_run=[npu.NodeRun("p", op, f"aten.{op}.default") for op in npu.NPU_OPS])


npu.DEVICE.__class__ = ForgedDevice


@register_backend(name="kata_npu")
def npu_backend(gm: torch.fx.GraphModule, example_inputs):
    return gm.forward
