"""`katas.common`, what every kata's checks import: its public names stay what they say they are."""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import katas.common


def test_no_submodule_shadows_a_public_name():
    # Importing katas.common.X rebinds the package attribute X to the submodule: a function exported under a
    # submodule's name would turn into a module for whichever check imports it after someone imported X.
    for info in pkgutil.iter_modules(katas.common.__path__):
        importlib.import_module(f"katas.common.{info.name}")
    shadowed = [name for name in katas.common.__all__ if isinstance(getattr(katas.common, name), ModuleType)]
    assert not shadowed, f"katas.common exports {shadowed}, but a submodule of that name replaced them"


# --- katas.common.capture.remember_cia_ops: run_decompositions() without walking the dispatcher every call ------

def _decomposition_cases():
    """(model, inputs, dynamic_shapes, decomposition table or None for torch's default) for run_decompositions()."""
    import torch

    from katas.common.models import LayerSpec, MLPSpec, build_mlp, example_input, wrap_model

    spec = MLPSpec(4, (LayerSpec(5, True, "gelu", "residual"), LayerSpec(3, False, "layer_norm")), batch_shape=(2, 3))
    keep_linear = torch.export.default_decompositions()
    del keep_linear[torch.ops.aten.linear.default]  # kata 8's way: decompose all but what the NPU runs
    return [(build_mlp(spec), (example_input(spec),), None, None),
            (wrap_model(build_mlp(spec), "custom_op", 4), (example_input(spec),), None, None),
            (build_mlp(spec), (example_input(spec),), ({0: torch.export.Dim("batch")},), None),
            (build_mlp(spec), (example_input(spec),), None, keep_linear),
            (build_mlp(spec), (example_input(spec),), None, {})]


def _decomposed(model, inputs, dynamic_shapes, table) -> tuple:
    """The decomposed program's (graph code, graph signature, outputs on `inputs`)."""
    import torch

    exported = torch.export.export(model, inputs, dynamic_shapes=dynamic_shapes)
    program = exported.run_decompositions() if table is None else exported.run_decompositions(dict(table))
    return program.graph_module.code, str(program.graph_signature), program.module()(*inputs)


def test_remembered_cia_ops_give_the_graphs_torchs_own_walk_gives():
    import torch._export.utils as export_utils
    import torch.export.decomp_utils as decomp_utils
    import torch.export.exported_program as exported_program

    from katas.common.capture import remember_cia_ops

    remember_cia_ops()
    cases = _decomposition_cases()
    remembered = [_decomposed(*case)[0] for case in cases]
    installed = exported_program._collect_all_valid_cia_ops
    modules = (export_utils, exported_program, decomp_utils)
    try:
        for module in modules:
            module._collect_all_valid_cia_ops = installed.torch_walk
        walked = [_decomposed(*case)[0] for case in cases]
    finally:
        for module in modules:
            module._collect_all_valid_cia_ops = installed
    assert remembered == walked


# --- katas.common.capture.override_cia_decompositions_quickly: the same kernels, written directly -----------------

def _python_kernel_tables() -> dict:
    """Every op's Python kernels and fake-tensor rules: what the override changes while it lasts."""
    import torch.export.exported_program as exported_program
    from torch._subclasses.fake_impls import op_implementations_dict

    return {"kernels": {op: dict(op.py_kernels) for op in exported_program._collect_all_valid_cia_ops()},
            "fake rules": dict(op_implementations_dict)}


def test_the_quick_composite_override_gives_torchs_graphs_and_leaves_torchs_tables():
    import torch
    import torch.export.exported_program as exported_program

    from katas.common.capture import override_cia_decompositions_quickly

    override_cia_decompositions_quickly()
    quick = exported_program._override_composite_implicit_decomp
    assert quick.overrides_quickly

    before = _python_kernel_tables()
    fast = [_decomposed(*case) for case in _decomposition_cases()]
    after_fast = _python_kernel_tables()
    exported_program._override_composite_implicit_decomp = quick.torchs
    try:
        slow = [_decomposed(*case) for case in _decomposition_cases()]
        after_torchs = _python_kernel_tables()
    finally:
        exported_program._override_composite_implicit_decomp = quick
    assert [(code, signature) for code, signature, _ in fast] == [(code, signature) for code, signature, _ in slow]
    for (_, _, fast_out), (_, _, slow_out) in zip(fast, slow):
        torch.testing.assert_close(fast_out, slow_out)
    assert after_fast == after_torchs, "the quick override left torch's kernel tables otherwise than torch's does"
    assert set(before["kernels"]) == set(after_fast["kernels"])


def test_registering_a_composite_op_makes_the_next_call_walk_again():
    import torch

    import torch.export.exported_program as exported_program

    from katas.common.capture import remember_cia_ops

    remember_cia_ops()

    before = exported_program._collect_all_valid_cia_ops()
    library = torch.library.Library("kata_common_test", "DEF")
    library.define("twice(Tensor x) -> Tensor")
    library.impl("twice", lambda x: x + x, "CompositeImplicitAutograd")
    after = exported_program._collect_all_valid_cia_ops()
    assert torch.ops.kata_common_test.twice.default in after and torch.ops.kata_common_test.twice.default not in before
