"""The one home of the katas' Hypothesis strategies.

Hidden checks draw random models from here, so every kata fuzzes the same family of MLPs and a
counterexample reads the same way everywhere (see `katas.common.models.describe`).
"""
from __future__ import annotations

from hypothesis import strategies as st

from katas.common.models import NPU_FRIENDLY_ACTIVATIONS, REUSES, LayerSpec, MLPSpec

WIDTHS = st.integers(min_value=1, max_value=6)


def layer_specs(activations=NPU_FRIENDLY_ACTIVATIONS, reuses=REUSES) -> st.SearchStrategy[LayerSpec]:
    """One Linear layer and what follows it. Shrinks toward width 1, bias, the first activation, no reuse."""
    return st.builds(
        LayerSpec,
        out_features=WIDTHS,
        bias=st.booleans().map(lambda b: not b),  # shrinks to True: a bias is the common case
        activation=st.sampled_from(activations),
        reuse=st.sampled_from(reuses),
    )


def mlp_specs(
    *,
    activations=NPU_FRIENDLY_ACTIVATIONS,
    reuses=REUSES,
    max_layers: int = 3,
    batch_shapes=((2,), (2, 3)),
    dtypes=("float32",),
    styles=("modules",),
) -> st.SearchStrategy[MLPSpec]:
    """Random MLPs: 1..max_layers Linear layers, each followed by an activation and maybe reused."""
    return st.builds(
        MLPSpec,
        in_features=WIDTHS,
        layers=st.lists(layer_specs(activations, reuses), min_size=1, max_size=max_layers).map(tuple),
        batch_shape=st.sampled_from(batch_shapes),
        dtype=st.sampled_from(dtypes),
        style=st.sampled_from(styles),
        seed=st.integers(min_value=0, max_value=2**16),
    )


def dialect_captures(captures) -> st.SearchStrategy[str]:
    """A capture method name from `captures` (see `katas.common.capture.CAPTURES`)."""
    return st.sampled_from(tuple(captures))


def float_tensors(shape, *, scales=(1.0, 1e-2, 10.0)) -> st.SearchStrategy:
    """float32 tensors of `shape` (a tuple, or a strategy of tuples) with elements in [-1, 1] times one
    scale drawn from `scales`. Small scales give small norms and large ones large norms, so code that
    branches on the magnitude of a tensor sees both sides. Shrinks toward zeros and the first scale."""
    import torch

    shapes = shape if isinstance(shape, st.SearchStrategy) else st.just(tuple(shape))

    def of_shape(dims: tuple[int, ...]) -> st.SearchStrategy:
        count = 1
        for d in dims:
            count *= d
        values = st.lists(st.floats(min_value=-1.0, max_value=1.0, width=32), min_size=count, max_size=count)
        return st.tuples(values, st.sampled_from(scales)).map(
            lambda vs: torch.tensor(vs[0], dtype=torch.float32).reshape(dims) * vs[1])

    return shapes.flatmap(of_shape)


def capture_plans(captures, wrappings=("plain",)) -> st.SearchStrategy[tuple[str, str, bool]]:
    """(capture method, wrapping, dynamic) triples that can be captured: symbolic_trace cannot trace torch.cond,
    and only `capture.DYNAMIC_CAPTURES` keep the batch size symbolic. Shrinks toward the first capture, the
    first wrapping, static shapes."""
    from katas.common.capture import DYNAMIC_CAPTURES

    def plans_for(method: str) -> st.SearchStrategy[tuple[str, str, bool]]:
        usable = tuple(w for w in wrappings if not (method == "symbolic_trace" and w == "cond")) or ("plain",)
        dynamic = st.booleans() if method in DYNAMIC_CAPTURES else st.just(False)
        return st.tuples(st.just(method), st.sampled_from(usable), dynamic)

    return st.sampled_from(tuple(captures)).flatmap(plans_for)


def linear_gelu_calls() -> st.SearchStrategy[dict]:
    """One call of a fused linear+GELU op, as plain data (kata 7's `OpCase` fields): x of shape (*lead, in) with
    0 to 3 leading dimensions (a zero-size batch among them), weight (out, in), a bias or None, both GELU forms,
    float32 or float64, x with or without requires_grad. Shrinks toward a 2-D float32 call with a bias."""
    leads = st.sampled_from(((2,), (), (1,), (3, 2), (2, 1, 3), (0, 2)))
    return st.fixed_dictionaries({
        "lead": leads,
        "in_features": WIDTHS,
        "out_features": WIDTHS,
        "bias": st.booleans().map(lambda b: not b),
        "approximate": st.sampled_from(("none", "tanh")),
        "dtype": st.sampled_from(("float32", "float64")),
        "seed": st.integers(min_value=0, max_value=2**16),
        "x_requires_grad": st.booleans().map(lambda b: not b),
    })
