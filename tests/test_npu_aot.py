"""The NPU's ahead-of-time runtime (katas/common/npu/aot.py): the program format, the op's real and fake kernels,
program memory, and replay in a fresh process."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from checker.core.manifest import REPO_ROOT
from katas.common import npu
from katas.common.npu import aot as npu_aot
from katas.common.npu.aot import ProgramFormatError, pack, unpack

RUN = torch.ops.npu_aot.run_program.default


def linear_gelu_graph(with_constant: bool = False) -> torch.fx.GraphModule:
    graph, root = torch.fx.Graph(), torch.nn.Module()
    x, w = graph.placeholder("x"), graph.placeholder("w")
    h = graph.call_function(torch.ops.aten.linear.default, (x, w))
    if with_constant:
        root.register_buffer("shift", torch.full((3,), 0.5))
        h = graph.call_function(torch.ops.aten.add.Tensor, (h, graph.get_attr("shift")))
    graph.output((graph.call_function(torch.ops.aten.gelu.default, (h,), {"approximate": "tanh"}),))
    return torch.fx.GraphModule(root, graph)


@pytest.fixture(autouse=True)
def empty_device():
    npu_aot.release_all()
    npu.DEVICE.release_all()
    npu.DEVICE.reset()
    yield
    npu_aot.release_all()
    npu.DEVICE.release_all()


def test_pack_and_unpack_give_back_the_graph_with_its_keywords_and_constants():
    gm = linear_gelu_graph(with_constant=True)
    again = unpack(pack(gm))
    x, w = torch.randn(2, 4), torch.randn(3, 4)
    torch.testing.assert_close(again(x, w)[0], F.gelu(F.linear(x, w) + 0.5, approximate="tanh"))
    assert json.loads(pack(gm))["format"] == "fx-katas-npu-program"


@pytest.mark.parametrize("build, complaint", [
    (lambda g: g.call_function(torch.sin, (g.placeholder("x"),)), "aten operators only"),
    (lambda g: g.call_module("sub", (g.placeholder("x"),)), "call_module node"),
    (lambda g: g.call_function(torch.ops.aten.mul.Tensor, (g.placeholder("x"), torch.device("cpu"))), "has no place"),
])
def test_pack_names_the_node_it_cannot_serialise(build, complaint):
    graph = torch.fx.Graph()
    graph.output(build(graph))
    root = torch.nn.Module()
    root.sub = torch.nn.Identity()
    with pytest.raises(ProgramFormatError, match=complaint):
        pack(torch.fx.GraphModule(root, graph))


def test_unpack_refuses_text_that_is_not_a_program():
    with pytest.raises(ProgramFormatError, match="not JSON"):
        unpack("linear(x)")
    with pytest.raises(ProgramFormatError, match="format fx-katas-npu-program"):
        unpack('{"format": "other", "version": 1, "nodes": []}')


def test_run_program_compiles_once_per_input_shape_and_counts_launches():
    program = pack(linear_gelu_graph())
    w = torch.randn(3, 4)
    for batch in (2, 5, 2):
        x = torch.randn(batch, 4)
        torch.testing.assert_close(RUN(program, [x, w])[0], F.gelu(F.linear(x, w), approximate="tanh"))
    assert npu.DEVICE.stats.programs_compiled == 2 and npu.DEVICE.stats.launches == 6


def test_run_program_keeps_programs_while_the_device_has_room_and_releases_the_least_recently_used():
    program = pack(linear_gelu_graph())
    w = torch.randn(3, 4)
    slots = npu.DEVICE.max_resident_programs
    npu.DEVICE.max_resident_programs = 3
    try:
        for batch in (1, 2, 3):
            RUN(program, [torch.randn(batch, 4), w])
        RUN(program, [torch.randn(1, 4), w])  # batch 1 is now the newest; batch 2 the least recently used
        npu.DEVICE.reset()
        RUN(program, [torch.randn(4, 4), w])  # memory full: releases batch 2's program
        assert npu.DEVICE.stats.programs_resident == 3 and npu.DEVICE.stats.programs_released == 1
        RUN(program, [torch.randn(1, 4), w])
        RUN(program, [torch.randn(3, 4), w])
        assert npu.DEVICE.stats.programs_compiled == 1  # batches 1 and 3 were kept
        RUN(program, [torch.randn(2, 4), w])
        assert npu.DEVICE.stats.programs_compiled == 2
    finally:
        npu.DEVICE.release_all()
        npu.DEVICE.max_resident_programs = slots
    RUN(program, [torch.randn(1, 4), w])  # a device reset: the kept programs are gone, compiled again
    assert npu.DEVICE.stats.programs_resident == 1


def test_the_fake_kernel_keeps_symbolic_sizes_and_constants_stay_real():
    program = pack(linear_gelu_graph(with_constant=True))

    class UsesProgram(torch.nn.Module):
        def forward(self, x, w):
            return RUN(program, [x, w])[0]

    ep = torch.export.export(UsesProgram(), (torch.randn(3, 4), torch.randn(3, 4)),
                             dynamic_shapes=({0: torch.export.Dim("batch")}, None))
    out = next(n for n in ep.graph.nodes if n.op == "output").args[0][0]
    assert not isinstance(out.meta["val"].shape[0], int)
    assert all(type(t) is torch.Tensor for _, t in unpack(program).named_buffers())


def test_replay_loads_a_saved_program_in_a_fresh_process_and_reports_what_fails(tmp_path):
    program = pack(linear_gelu_graph())

    class UsesProgram(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(3, 4))

        def forward(self, x):
            return RUN(program, [x, self.w])[0]

    model = UsesProgram()
    torch.export.save(torch.export.export(model, (torch.randn(3, 4),), dynamic_shapes=({0: torch.export.Dim("b")},)),
                      tmp_path / "p.pt2")
    x = torch.randn(6, 4)
    request = {"programs": [
        {"path": str(tmp_path / "p.pt2"), "cases": [{"inputs": npu_aot.dump_tensors((x,)), "state": None}]},
        {"path": str(tmp_path / "missing.pt2"), "cases": []},
    ]}
    proc = subprocess.run([sys.executable, "-c", npu_aot.REPLAY_COMMAND], input=json.dumps(request),
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    found, missing = json.loads(proc.stdout)["programs"]
    torch.testing.assert_close(npu_aot.load_tensors(found["cases"][0]["outputs"]),
                               F.gelu(F.linear(x, model.w.detach()), approximate="tanh"))
    assert found["launches"] == 2 and found["programs_compiled"] == 1
    assert missing["error"].startswith("FileNotFoundError")
