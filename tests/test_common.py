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

def _decomposed_code(model, inputs, dynamic_shapes=None) -> str:
    import torch

    return torch.export.export(model, inputs, dynamic_shapes=dynamic_shapes).run_decompositions().graph_module.code


def test_remembered_cia_ops_give_the_graphs_torchs_own_walk_gives():
    import torch
    import torch._export.utils as export_utils
    import torch.export.decomp_utils as decomp_utils
    import torch.export.exported_program as exported_program

    from katas.common.capture import remember_cia_ops
    from katas.common.models import MLPSpec, LayerSpec, build_mlp, example_input, wrap_model

    remember_cia_ops()
    spec = MLPSpec(4, (LayerSpec(5, True, "gelu", "residual"), LayerSpec(3, False, "layer_norm")), batch_shape=(2, 3))
    cases = [(build_mlp(spec), (example_input(spec),), None),
             (wrap_model(build_mlp(spec), "custom_op", 4), (example_input(spec),), None),
             (build_mlp(spec), (example_input(spec),), ({0: torch.export.Dim("batch")},))]
    remembered = [_decomposed_code(*case) for case in cases]
    installed = exported_program._collect_all_valid_cia_ops
    modules = (export_utils, exported_program, decomp_utils)
    try:
        for module in modules:
            module._collect_all_valid_cia_ops = installed.torch_walk
        walked = [_decomposed_code(*case) for case in cases]
    finally:
        for module in modules:
            module._collect_all_valid_cia_ops = installed
    assert remembered == walked


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
