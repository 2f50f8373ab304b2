"""The simulated NPU (katas/common/npu/device.py) is the ground truth katas 4 and 5 are checked against: it must compile
exactly what it claims to run, run it with its own kernels, count honestly, and fail the way it documents."""
from __future__ import annotations

import warnings

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

from katas.common.npu import (
    DEVICE,
    KERNELS,
    LAYOUT_OPS,
    MAX_RESIDENT_PROGRAMS,
    NPU,
    NPU_OPS,
    NPUCompileError,
    NPUFallbackWarning,
    NPUProgram,
    NPURuntimeError,
    canonical_name,
)
from katas.common.ops import LINEAR_GELU_CALLS
from katas.common.zoo import ZOO

aten = torch.ops.aten


@pytest.fixture(autouse=True)
def fresh_device():
    DEVICE.release_all()
    DEVICE.reset()
    yield
    DEVICE.max_resident_programs = MAX_RESIDENT_PROGRAMS
    DEVICE.release_all()
    DEVICE.reset()


def lowered(name: str, dtype: torch.dtype = torch.float32):
    """make_fx (ATen, t + addmm) graph of a zoo model, its input, and the eager output."""
    model = ZOO[name].build().to(dtype)
    (x,) = ZOO[name].inputs()
    x = x.to(dtype)
    with torch.no_grad():
        return make_fx(model)(x), x, model(x)


def test_npu_ops_is_the_documented_table_and_every_op_has_a_kernel():
    assert NPU_OPS == {"linear", "addmm", "mm", "matmul", "t", "permute", "transpose", "view", "reshape",
                       "gelu", "relu", "sigmoid", "tanh", "silu", "add", "mul", "linear_gelu"}
    assert set(KERNELS) == NPU_OPS
    assert LAYOUT_OPS < NPU_OPS


def test_canonical_name_strips_namespace_and_overload():
    assert canonical_name(aten.addmm.default) == "addmm"
    assert canonical_name(aten.add.Tensor) == "add"
    assert canonical_name(torch.ops.kata.linear_gelu.default) == "linear_gelu"
    assert canonical_name(torch.relu) is None


@pytest.mark.parametrize("name", ["mlp", "mlp_3d", "residual", "functional", "pointwise"])
def test_program_computes_exactly_what_the_graph_computes(name):
    gm, x, expected = lowered(name)
    program = NPU.compile(gm, [x])
    assert torch.equal(program(x), expected)
    assert DEVICE.stats.runs == 1 and DEVICE.stats.programs_compiled == 1


def test_launches_count_compute_nodes_and_layout_ops_are_free():
    gm, x, _ = lowered("mlp_3d")  # view, t, addmm, view, gelu, view, t, addmm, view
    program = NPU.compile(gm, [x])
    program(x)
    stats = DEVICE.stats
    assert program.launches == stats.launches == 3  # addmm, gelu, addmm
    assert stats.ops_run == {"view": 4, "t": 2, "addmm": 2, "gelu": 1}
    assert [run.node for run in stats.nodes_run] == [n.name for n in gm.graph.nodes if n.op == "call_function"]
    assert all(run.program == program.name for run in stats.nodes_run)
    assert stats.nodes_run[2].target == "aten.addmm.default"


def test_fused_linear_gelu_is_one_launch_with_the_npus_own_kernel():
    def unfused(x, w, b):
        return F.gelu(F.linear(x, w, b))

    def fused(x, w, b):
        return torch.ops.kata.linear_gelu(x, w, b)

    args = (torch.randn(3, 4), torch.randn(5, 4), torch.randn(5))
    plain, one = NPU.compile(make_fx(unfused)(*args), args), NPU.compile(make_fx(fused)(*args), args)
    LINEAR_GELU_CALLS.reset()
    assert torch.equal(one(*args), plain(*args))
    assert LINEAR_GELU_CALLS.count == 0, "the NPU must run its own kernel, not the op's CPU implementation"
    assert (plain.launches, one.launches) == (2, 1)
    assert one.estimated_us < plain.estimated_us


def test_bytes_cross_the_host_boundary_each_run_and_constants_once():
    gm, x, _ = lowered("mlp")  # make_fx keeps the parameters as get_attr constants
    constants = sum(p.numel() * 4 for p in ZOO["mlp"].build().parameters())
    program = NPU.compile(gm, [x])
    assert DEVICE.stats.bytes_to_device == DEVICE.stats.constant_bytes_to_device == constants
    program(x)
    program(x)
    assert DEVICE.stats.input_bytes_to_device == 2 * x.numel() * 4
    assert DEVICE.stats.bytes_to_device == constants + 2 * x.numel() * 4
    assert DEVICE.stats.constant_bytes_to_device == constants  # not again per run
    assert DEVICE.stats.bytes_from_device == 2 * 2 * 3 * 4  # output (2, 3) float32, twice
    assert DEVICE.stats.estimated_us == pytest.approx(2 * program.estimated_us)


def test_constants_are_the_programs_own_copy():
    """A frozen weight is copied at compile time: changing the host tensor afterwards leaves the program as it was
    (which is why a backend that freezes parameters must notice when they change)."""
    model = ZOO["mlp"].build()
    x = ZOO["mlp"].inputs()[0]
    with torch.no_grad():
        gm, expected = make_fx(model)(x), model(x)
        program = NPU.compile(gm, [x])
        model.fc1.weight.mul_(-1)  # make_fx's get_attr constants are the module's own tensors
        assert not torch.equal(model(x), expected)
    assert torch.equal(program(x), expected)


def test_int_inputs_are_sizes_the_program_is_specialised_to():
    def f(x, n):
        return x.view(n, -1).relu()

    x = torch.randn(2, 6)
    gm = make_fx(f)(x, 3)
    program = NPU.compile(gm, [x, 3])
    assert torch.equal(program(x, 3), x.view(3, -1).relu())
    assert DEVICE.stats.input_bytes_to_device == x.numel() * 4  # ints cost no transfer
    with pytest.raises(NPURuntimeError, match="compiled for the value 3"):
        program(x, 4)
    graph = torch.fx.Graph()
    graph.output(graph.call_function(aten.relu.default, (graph.placeholder("x"),)))
    with pytest.raises(NPUCompileError, match="relu kernel rejects"):  # an int where the graph needs a tensor
        NPU.compile(torch.fx.GraphModule({}, graph), [3])


# --- program memory --------------------------------------------------------------------------------------------

def relu_program(batch: int) -> NPUProgram:
    x = torch.randn(batch, 3)
    return NPU.compile(make_fx(lambda t: t.relu())(x), [x], name=f"relu_{batch}")


def test_program_memory_is_bounded_and_a_full_device_refuses_to_compile():
    DEVICE.max_resident_programs = 2
    kept = [relu_program(1), relu_program(2)]
    assert DEVICE.stats.programs_resident == 2
    with pytest.raises(NPUCompileError, match=r"no room for a program for inputs \(3, 3\) float32.*memory is full"):
        relu_program(3)
    assert DEVICE.stats.programs_compiled == 2 and len(DEVICE.stats.compile_errors) == 1
    assert all(torch.equal(p(torch.ones(i + 1, 3)), torch.ones(i + 1, 3)) for i, p in enumerate(kept))


def test_a_released_program_frees_its_slot_and_cannot_run():
    DEVICE.max_resident_programs = 1
    program = relu_program(1)
    program.release()
    assert (DEVICE.stats.programs_resident, DEVICE.stats.programs_released) == (0, 1) and not program.resident
    with pytest.raises(NPURuntimeError, match="released"):
        program(torch.ones(1, 3))
    relu_program(2)  # the slot is free again
    assert DEVICE.stats.runtime_errors and DEVICE.stats.runs == 0


def test_a_dropped_handle_frees_its_slot():
    DEVICE.max_resident_programs = 1
    program = relu_program(1)
    del program
    second = relu_program(2)  # no error: the first program was garbage-collected
    assert DEVICE.stats.programs_released == 1 and second.resident


def test_kept_programs_release_the_least_recently_used_when_memory_is_full():
    from katas.common.npu import KeptPrograms

    DEVICE.max_resident_programs = 3
    kept = KeptPrograms()  # no size of its own: the device's memory bounds it
    first, second, third = (kept.get(i, lambda i=i: relu_program(i)) for i in (1, 2, 3))
    assert kept.get(1, lambda: relu_program(9)) is first  # a use makes 1 the newest: 2 is now used longest ago
    fourth = kept.get(4, lambda: relu_program(4))
    assert not second.resident and first.resident and third.resident and fourth.resident
    assert 2 not in kept and len(kept) == 3 and DEVICE.stats.programs_resident == 3
    kept.discard(3)
    assert not third.resident and 3 not in kept and DEVICE.stats.programs_resident == 2


def test_kept_programs_raise_when_memory_is_full_of_programs_they_do_not_hold():
    from katas.common.npu import KeptPrograms

    DEVICE.max_resident_programs = 1
    others = relu_program(1)
    with pytest.raises(NPUCompileError) as refused:
        KeptPrograms().get("mine", lambda: relu_program(2))
    assert refused.value.what == "program" and others.resident


def test_reset_keeps_program_memory_and_release_all_empties_it():
    program = relu_program(1)
    DEVICE.reset()
    assert DEVICE.stats.programs_resident == 1 and DEVICE.stats.max_resident_programs == MAX_RESIDENT_PROGRAMS
    DEVICE.release_all()
    assert DEVICE.stats.programs_resident == 0 and not program.resident and DEVICE.stats.release_all_calls == 1


def test_kept_programs_make_room_before_compiling_on_a_full_device(monkeypatch):
    """Once memory stays full, asking a full device to compile first would cost a full garbage collection per
    program (the device looks for dropped handles before it refuses): BERT's real-model check spent 8 s there."""
    import gc

    from katas.common.npu import KeptPrograms

    DEVICE.max_resident_programs = 2
    kept = KeptPrograms()
    for i in (1, 2):
        kept.get(i, lambda i=i: relu_program(i))
    assert DEVICE.free_program_slots() == 0
    collections = []
    monkeypatch.setattr(gc, "collect", lambda *a: collections.append(a) or 0)
    third = kept.get(3, lambda: relu_program(3))
    assert third.resident and 1 not in kept and not collections and DEVICE.free_program_slots() == 0


def test_a_worker_may_not_empty_the_device_but_its_call_is_counted():
    """Under the checker DEVICE.release_all() in the attempt's process would free programs of other code too: the
    client refuses it, and the device counts the call where the checks read it."""
    from katas.common.npu import DeviceService
    from katas.common.npu.device import DeviceClient

    handlers = DeviceService().handlers()
    client = DeviceClient(lambda service, *args: handlers[service](*args))
    others = relu_program(1)
    with pytest.raises(RuntimeError, match="Release only the programs your backend compiled"):
        client.release_all()
    assert others.resident and DEVICE.stats.release_all_calls == 1
    assert client.free_program_slots() == DEVICE.max_resident_programs - 1


def test_outputs_keep_their_structure_and_never_alias_inputs():
    def f(x):
        return x, (x.relu(),)

    x = torch.randn(2, 3)
    program = NPU.compile(make_fx(f)(x), [x])
    same, (relu,) = program(x)
    assert torch.equal(same, x) and same.data_ptr() != x.data_ptr()
    assert torch.equal(relu, x.relu())


def test_fake_example_inputs_are_enough_to_compile():
    from torch._subclasses.fake_tensor import FakeTensorMode

    gm, x, expected = lowered("mlp")
    with FakeTensorMode() as mode:
        fake = mode.from_tensor(x)
    assert torch.equal(NPU.compile(gm, [fake])(x), expected)


# --- compile-time rejection ---------------------------------------------------------------------------------

def rejection(gm, inputs) -> NPUCompileError:
    with pytest.raises(NPUCompileError) as info:
        NPU.compile(gm, inputs)
    assert DEVICE.stats.compile_errors[-1] == str(info.value)
    assert DEVICE.stats.programs_compiled == 0
    return info.value


def test_float64_is_rejected_naming_the_input():
    gm, x, _ = lowered("mlp", torch.float64)
    error = rejection(gm, [x])
    assert "float64" in error.reason and error.node in str(error)


def test_an_op_outside_npu_ops_is_rejected_naming_the_node():
    x = torch.randn(2, 3)
    gm = make_fx(lambda t: torch.sin(t).relu())(x)
    error = rejection(gm, [x])
    assert error.node == "sin" and "aten.sin.default" in error.reason


def test_module_and_torch_level_graphs_are_rejected():
    x = torch.randn(2, 4)
    assert "call_module" in rejection(torch.fx.symbolic_trace(ZOO["mlp"].build()), [x]).reason
    assert "not an ATen op" in rejection(torch.fx.symbolic_trace(lambda t: torch.relu(t)), [x]).reason


def test_overloads_that_write_into_arguments_are_rejected():
    x = torch.randn(2, 3)
    graph = torch.fx.Graph()
    placeholder = graph.placeholder("x")
    graph.output(graph.call_function(aten.add.out, (placeholder, placeholder), {"out": placeholder}))
    assert "functional" in rejection(torch.fx.GraphModule({}, graph), [x]).reason  # "add" is in NPU_OPS, add.out is not


def test_an_overload_without_a_kernel_is_rejected():
    x = torch.randn(2, 3)
    graph = torch.fx.Graph()
    node = graph.call_function(aten.view.dtype, (graph.placeholder("x"), torch.int32))
    graph.output(node)
    assert "no NPU kernel" in rejection(torch.fx.GraphModule({}, graph), [x]).reason


def test_symbolic_shapes_are_rejected():
    x = torch.randn(2, 3)
    gm = make_fx(lambda t: t.relu(), tracing_mode="symbolic")(x)
    fake = next(n for n in gm.graph.nodes if n.op == "placeholder").meta["val"]
    assert "static" in rejection(gm, [fake]).reason
    assert "symbolic integer" in rejection(gm, [torch.SymInt(fake.shape[0].node)]).reason


def test_wrong_number_of_example_inputs_is_rejected():
    gm, x, _ = lowered("mlp")
    rejection(gm, [x, x])


# --- run-time failures --------------------------------------------------------------------------------------

def test_an_input_of_another_shape_or_dtype_raises_at_run_time():
    gm, x, _ = lowered("mlp")
    program = NPU.compile(gm, [x])
    with pytest.raises(NPURuntimeError, match=r"\(5, 4\).*compiled for \(2, 4\)"):
        program(torch.randn(5, 4))
    with pytest.raises(NPURuntimeError, match="float16"):
        program(x.half())
    with pytest.raises(NPURuntimeError):
        program()
    assert len(DEVICE.stats.runtime_errors) == 3 and DEVICE.stats.runs == 0 and not DEVICE.busy


def test_injected_faults_hit_the_next_n_runs_only():
    gm, x, expected = lowered("mlp")
    program = NPU.compile(gm, [x])
    DEVICE.inject_fault(2)
    for _ in range(2):
        with pytest.raises(NPURuntimeError, match="fault"):
            program(x)
    assert torch.equal(program(x), expected)
    assert (len(DEVICE.stats.runtime_errors), DEVICE.stats.runs) == (2, 1)


def test_reset_zeroes_stats_and_cancels_faults_but_programs_stay_valid():
    gm, x, expected = lowered("mlp")
    program = NPU.compile(gm, [x])
    program(x)
    DEVICE.inject_fault(3)
    DEVICE.reset()
    assert DEVICE.stats.runs == DEVICE.stats.launches == DEVICE.stats.programs_compiled == 0
    assert torch.equal(program(x), expected)


def test_busy_is_true_only_while_the_device_compiles_or_runs():
    seen = []
    gm, x, _ = lowered("pointwise")
    original = KERNELS["relu"]
    KERNELS["relu"] = lambda self: (seen.append(DEVICE.busy), original(self))[1]
    try:
        program = NPU.compile(gm, [x])  # steps bind their kernel at compile time, and run it once on meta tensors
        program(x)
    finally:
        KERNELS["relu"] = original
    assert seen == [True, True] and not DEVICE.busy


def test_programs_are_made_by_compile_only():
    with pytest.raises(TypeError):
        NPUProgram()


def test_fallback_warning_is_a_user_warning():
    assert issubclass(NPUFallbackWarning, UserWarning)
    with pytest.warns(NPUFallbackWarning):
        warnings.warn("partition 0 runs on the CPU", NPUFallbackWarning)
