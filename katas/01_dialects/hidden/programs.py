"""Kata 1's generated model programs: plain data that `katas.common.strategies.dialect_programs` draws, built
into a model, captured one of many ways and edited the way a pass leaves a graph.

A program is ("program", body, sizes, method, dynamic, edit):

* body, a tree: ("core",) relu(h) * 2 (core ATen ops); ("aten",) the same written with aten overloads
  (torch.ops.aten.relu.default: aten-level in every capture, Dynamo's too); ("linear",) a Linear (aten.linear /
  aten.t, not core);
  ("custom",) kata::linear_gelu (a custom op); ("chunk",) torch.chunk(h, 2, -1) swapped and concatenated (a
  torch-level call whose recorded value is a tuple of tensors, not a size); ("seq", a, b) a then b; and the
  higher-order ops (HOPS): ("cond", true_body, false_body) torch.cond, ("map", body) torch._higher_order_ops.map,
  ("scan", body) torch._higher_order_ops.scan (a HOP the lesson's table does not name), ("no_grad", body)
  (export: wrap_with_set_grad_enabled), ("autocast", body) (export: wrap_with_autocast), ("wrap", body)
  (Dynamo's `wrap` higher-order op). Nesting: a HOP's body may hold HOPs.
* sizes: what is computed from the batch size b = x.shape[0] and multiplied into the result: "none", "int"
  (torch.sym_max(b * 2, 2)), "float" (torch.sym_float(b) / 2), "bool" (b > 1). Their recorded values are
  SymInt, SymFloat, SymBool with a symbolic batch; plain int and float in a static Dynamo graph (sym_max,
  sym_float); plain int, float and bool after "symbolic_trace_values" (symbolic_trace, then FakeTensorProp).
  "numel": aten.mul.Tensor(h, x.numel()), a tensor method that reads a size: Dynamo records a call_method `numel`
  whose value is a SymInt (torch._dynamo.export even with static shapes), export aten.sym_numel.
* method: a capture of `katas.common.capture.CAPTURES`, "dynamo_export" (torch._dynamo.export) or
  "symbolic_trace_values".
* edit: "none"; "dead_subgraphs" (a pass makes the graph return its input and drops dead code: the subgraphs of
  the removed higher-order ops stay behind as attributes); "unread_get_attrs" (the same pass, but it erases only
  the call nodes nothing reads, without eliminate_dead_code(): the get_attr nodes that fetched the subgraphs stay
  in the graph with no reader); "partitioned" (a partitioner fuses runs of call_function nodes into call_module
  GraphModules, as katas 4 and 5 do); "unread_node" (a pass half done: it added an aten.t.default node that no
  node reads, in the innermost subgraph the graph's first higher-order op calls, or in the graph itself when it
  calls none; nodes nobody reads still count); "unread_hops" (the output returns the input, and the pass erases
  the call nodes nothing reads except higher-order ops: each higher-order op it reaches stays, read by no node, and
  still calls its subgraphs); "subgraphs_as_keywords" (every cond node, in subgraphs too, takes its branches and
  operands as keyword arguments, true_fn=, false_fn=, operands=: the graph still runs).

Also here: `flex_graph`, flex_attention captured with its mask's subgraph inside the block-mask tuple argument
(`FLEX_CASES`: which subgraph holds which level, and the capture).
"""
from __future__ import annotations

import functools
import operator

import torch
import torch.fx
import torch.nn as nn

WIDTH = 4
BATCH = 4
HOPS = ("cond", "map", "scan", "no_grad", "autocast", "wrap")
LEAVES = ("core", "aten", "linear", "custom", "chunk")
SIZES = ("none", "int", "float", "bool", "numel")
# which higher-order ops each capture can take (symbolic_trace cannot trace cond or map; some captures inline a
# `with` block or wrap rather than keep a higher-order op)
PROGRAM_CAPTURES = {
    "symbolic_trace": ("no_grad", "autocast", "wrap"),
    "symbolic_trace_values": ("no_grad", "autocast", "wrap"),
    "dynamo": ("cond", "map", "scan", "no_grad", "autocast", "wrap"),
    "dynamo_export": ("cond", "map", "scan", "no_grad", "autocast", "wrap"),
    "make_fx": ("cond", "map", "scan", "no_grad", "autocast", "wrap"),
    "make_fx_pre_dispatch": ("cond", "map", "scan", "no_grad", "autocast", "wrap"),
    "export": ("cond", "map", "scan", "no_grad", "autocast", "wrap"),
    "export_core": ("cond", "map", "scan", "no_grad", "autocast", "wrap"),
    "aot_autograd": ("cond", "map", "scan", "no_grad", "autocast", "wrap"),
}
DYNAMIC_PROGRAM_CAPTURES = ("dynamo", "dynamo_export", "export", "export_core", "aot_autograd")
EDITS = ("none", "dead_subgraphs", "unread_get_attrs", "partitioned", "unread_node", "unread_hops",
         "subgraphs_as_keywords")


def _leaves(body: tuple) -> list[tuple]:
    if body[0] in LEAVES:
        return [body]
    return [leaf for part in body[1:] for leaf in _leaves(part)]


class ProgramModel(nn.Module):
    """The model a program's body and sizes describe; leaf i that needs weights owns `lin{i}`."""

    def __init__(self, body: tuple, sizes: str) -> None:
        super().__init__()
        self.body, self.sizes = body, sizes
        with torch.random.fork_rng():
            torch.manual_seed(0)
            self.lins = nn.ModuleList(nn.Linear(WIDTH, WIDTH) for _ in _leaves(body))

    def _run(self, body: tuple, h: torch.Tensor, counter: list[int]) -> torch.Tensor:
        kind = body[0]
        if kind in LEAVES:
            index = counter[0]
            counter[0] += 1
            if kind == "core":
                return torch.relu(h) * 2
            if kind == "aten":
                return torch.ops.aten.mul.Tensor(torch.ops.aten.relu.default(h), 2)
            if kind == "linear":
                return self.lins[index](h)
            if kind == "chunk":
                left, right = torch.chunk(h, 2, -1)
                return torch.cat([right, left], -1)
            lin = self.lins[index]
            return torch.ops.kata.linear_gelu(h, lin.weight, lin.bias)
        if kind == "seq":
            return self._run(body[2], self._run(body[1], h, counter), counter)
        if kind == "cond":
            start = counter[0]
            _count(body[1], counter)
            middle = counter[0]
            _count(body[2], counter)
            return torch.cond(h.amax() > 0, lambda t: self._run(body[1], t, [start]),
                              lambda t: self._run(body[2], t, [middle]), (h,))
        if kind == "map":
            from torch._higher_order_ops.map import map as hop_map

            start = counter[0]
            _count(body[1], counter)
            # map over a leading dimension of one: each row is h itself, so maps nest at any depth
            return hop_map(lambda row: self._run(body[1], row, [start]), h.unsqueeze(0)).squeeze(0)
        if kind == "scan":
            from torch._higher_order_ops.scan import scan

            start = counter[0]
            _count(body[1], counter)

            def combine(carry: torch.Tensor, row: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                out = self._run(body[1], row + carry * 0, [start])
                return out, out.clone()

            # scan over a leading dimension of one: the carry out of the only step is body(h); the initial carry
            # h * 0 keeps the top level core (zeros_like is not core)
            return scan(combine, h * 0, h.unsqueeze(0))[0]
        if kind == "no_grad":
            with torch.no_grad():
                return self._run(body[1], h, counter)
        if kind == "autocast":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = self._run(body[1], h, counter)
            return out.float()
        if kind == "wrap":
            from torch._higher_order_ops.wrap import wrap

            start = counter[0]
            _count(body[1], counter)
            return wrap(lambda t: self._run(body[1], t, [start]), h)
        raise ValueError(f"unknown program part {kind!r}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self._run(self.body, x, [0])
        b = x.shape[0]
        traced = isinstance(b, torch.fx.Proxy)  # symbolic_trace: sym_max and sym_float cannot take a Proxy
        if self.sizes == "int":
            return h * (b * 2 if traced else torch.sym_max(b * 2, 2))
        if self.sizes == "float":
            return h * ((b / 2) if traced else torch.sym_float(b) / 2)
        if self.sizes == "bool":
            return h * (b > 1)
        if self.sizes == "numel":
            return torch.ops.aten.mul.Tensor(h, x.numel())
        if self.sizes == "all":  # every kind at once (the node checks)
            return h * (b * 2 if traced else torch.sym_max(b * 2, 2)) * (
                (b / 2) if traced else torch.sym_float(b) / 2) * (b > 1)
        return h


def _count(body: tuple, counter: list[int]) -> None:
    counter[0] += len(_leaves(body))


def example_input() -> torch.Tensor:
    return torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(1))


def _dynamo_export(model: nn.Module, x: torch.Tensor, dynamic: bool) -> torch.fx.GraphModule:
    import torch._dynamo

    torch._dynamo.reset()
    shapes = ({0: torch.export.Dim("batch")},) if dynamic else None
    gm, _ = torch._dynamo.export(model, dynamic_shapes=shapes)(x)
    return gm


def capture_program(body: tuple, sizes: str, method: str, dynamic: bool) -> torch.fx.GraphModule:
    """The graph `method` makes of the program (before any edit)."""
    from katas.common import capture, ops  # noqa: F401 - ops registers kata::linear_gelu

    model = ProgramModel(body, sizes).eval()
    x = example_input()
    if method == "dynamo_export":
        return _dynamo_export(model, x, dynamic)
    if method == "symbolic_trace_values":
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.passes.fake_tensor_prop import FakeTensorProp

        gm = torch.fx.symbolic_trace(model)
        mode = FakeTensorMode(allow_non_fake_inputs=True)
        FakeTensorProp(gm, mode).propagate(mode.from_tensor(x))
        return gm
    return capture(model, (x,), method, dynamic=dynamic).gm


def kill_everything_but_the_input(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """What a pass that finds the whole model dead leaves: the output returns the first input, dead code is gone,
    and the GraphModules the removed higher-order ops called stay behind as attributes."""
    first = next(n for n in gm.graph.nodes if n.op == "placeholder" and "val" not in n.meta
                 or n.op == "placeholder" and isinstance(n.meta.get("val"), torch.Tensor))
    output = next(n for n in gm.graph.nodes if n.op == "output")
    output.args = (first,) if not isinstance(output.args[0], (tuple, list)) else ((first,),)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


def erase_unread_calls(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """What a pass without eliminate_dead_code() leaves: the output returns the first input, and it erases the call
    nodes nothing reads (last first), but not the get_attr nodes, so those that fetched the removed higher-order ops'
    subgraphs stay in the graph with no reader."""
    first = next(n for n in gm.graph.nodes if n.op == "placeholder" and "val" not in n.meta
                 or n.op == "placeholder" and isinstance(n.meta.get("val"), torch.Tensor))
    output = next(n for n in gm.graph.nodes if n.op == "output")
    output.args = (first,) if not isinstance(output.args[0], (tuple, list)) else ((first,),)
    for node in reversed(list(gm.graph.nodes)):
        if node.op.startswith("call_") and not node.users:
            gm.graph.erase_node(node)
    gm.recompile()
    return gm


def erase_unread_calls_but_hops(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """What a pass that keeps higher-order ops leaves: the output returns the first input, and it erases the call
    nodes nothing reads (repeatedly, so what fed them goes too), except higher-order ops: those it reaches stay in
    the graph, read by no node, still calling their subgraphs (gm(x) still runs them)."""
    first = next(n for n in gm.graph.nodes if n.op == "placeholder" and "val" not in n.meta
                 or n.op == "placeholder" and isinstance(n.meta.get("val"), torch.Tensor))
    output = next(n for n in gm.graph.nodes if n.op == "output")
    output.args = (first,) if not isinstance(output.args[0], (tuple, list)) else ((first,),)
    erased = True
    while erased:
        erased = False
        for node in reversed(list(gm.graph.nodes)):
            if (node.op.startswith("call_") and not node.users
                    and not isinstance(node.target, torch._ops.HigherOrderOperator)):
                gm.graph.erase_node(node)
                erased = True
    gm.recompile()
    return gm


def conds_take_keywords(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """What a pass that rewrites control flow may leave: every cond node, in `gm` and in every subgraph, called as
    cond(pred, true_fn=..., false_fn=..., operands=...). torch.cond takes keywords, so the graph still runs."""
    for module in gm.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        for node in module.graph.nodes:
            if node.op == "call_function" and node.target is torch.ops.higher_order.cond and len(node.args) == 4:
                pred, true_fn, false_fn, operands = node.args
                node.args = (pred,)
                node.kwargs = {"true_fn": true_fn, "false_fn": false_fn, "operands": operands}
        module.recompile()
    return gm


def _first_called_subgraph(gm: torch.fx.GraphModule) -> torch.fx.GraphModule | None:
    """The first GraphModule the first higher-order op node of `gm` takes as an argument, if any."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.HigherOrderOperator):
            for arg in node.all_input_nodes:
                if arg.op == "get_attr":
                    sub = functools.reduce(getattr, arg.target.split("."), gm)
                    if isinstance(sub, torch.fx.GraphModule):
                        return sub
    return None


def innermost_graph(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Following the first higher-order op's first subgraph down: the deepest graph (`gm` itself when it calls none)."""
    while (sub := _first_called_subgraph(gm)) is not None:
        gm = sub
    return gm


def add_unread_node(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """What a pass leaves halfway, before eliminate_dead_code(): an aten.t.default node (aten-level, not core) that no
    node reads, added to `innermost_graph(gm)` on its first tensor placeholder. Returns `gm` (changed in place)."""
    graph_module = innermost_graph(gm)
    placeholders = [n for n in graph_module.graph.nodes if n.op == "placeholder"]
    tensors = [n for n in placeholders
               if isinstance(n.meta.get("val", n.meta.get("example_value")), (torch.Tensor, type(None)))]
    source = (tensors or placeholders)[0]
    output = next(n for n in graph_module.graph.nodes if n.op == "output")
    with graph_module.graph.inserting_before(output):
        graph_module.graph.call_function(torch.ops.aten.t.default, (source,))
    graph_module.recompile()
    return gm


def partition(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """What katas 4 and 5's partitioner makes: runs of call_function nodes (higher-order ops, getitem and nodes
    that compute sizes apart) fused into call_module GraphModules named fused_N."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupportBase

    class Computes(OperatorSupportBase):
        def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
            if node.op != "call_function" or node.target is operator.getitem:
                return False
            if isinstance(node.target, torch._ops.HigherOrderOperator):
                return False
            value = node.meta.get("val", node.meta.get("example_value"))
            return isinstance(value, torch.Tensor)

    partitioner = CapabilityBasedPartitioner(gm, Computes(), allows_single_node_partition=True)
    return partitioner.partition_and_fuse()


@functools.lru_cache(maxsize=16)
def unedited_graph(body: tuple, sizes: str, method: str, dynamic: bool) -> torch.fx.GraphModule:
    """capture_program, kept for the checks that ask about the same program (never edit what it returns)."""
    return capture_program(body, sizes, method, dynamic)


def program_graph(program: tuple) -> torch.fx.GraphModule:
    """The graph of a drawn program, edited as it says (an edited graph is captured afresh)."""
    _, body, sizes, method, dynamic, edit = program
    if edit == "none":
        return unedited_graph(body, sizes, method, dynamic)
    gm = capture_program(body, sizes, method, dynamic)
    if edit == "dead_subgraphs":
        return kill_everything_but_the_input(gm)
    if edit == "unread_get_attrs":
        return erase_unread_calls(gm)
    if edit == "partitioned":
        return partition(gm)
    if edit == "unread_node":
        return add_unread_node(gm)
    if edit == "unread_hops":
        return erase_unread_calls_but_hops(gm)
    if edit == "subgraphs_as_keywords":
        return conds_take_keywords(gm)
    return gm


def describe_body(body: tuple) -> str:
    kind = body[0]
    if kind == "core":
        return "relu(h) * 2"
    if kind == "aten":
        return "aten.mul.Tensor(aten.relu.default(h), 2)"
    if kind == "linear":
        return "Linear(h)"
    if kind == "custom":
        return "kata.linear_gelu(h, w, b)"
    if kind == "chunk":
        return "torch.cat(torch.chunk(h, 2, -1)[::-1], -1)"
    if kind == "seq":
        return f"{describe_body(body[1])} then {describe_body(body[2])}"
    if kind == "cond":
        return f"torch.cond(h.amax() > 0, [{describe_body(body[1])}], [{describe_body(body[2])}])"
    if kind == "map":
        return f"torch._higher_order_ops.map.map([{describe_body(body[1])}], h.unsqueeze(0)).squeeze(0)"
    if kind == "scan":
        return f"torch._higher_order_ops.scan.scan(lambda c, row: ([{describe_body(body[1])}] of row, ...), 0, h[None])[0]"
    if kind == "no_grad":
        return f"with torch.no_grad(): [{describe_body(body[1])}]"
    if kind == "autocast":
        return f"with torch.autocast('cpu', bfloat16): [{describe_body(body[1])}], then .float()"
    return f"torch._higher_order_ops.wrap.wrap([{describe_body(body[1])}])"


def describe_sizes(sizes: str) -> str:
    return SIZE_TEXT.get(sizes, " * sym_max(b * 2, 2) * (sym_float(b) / 2) * (b > 1)")


SIZE_TEXT = {"none": "", "int": " * torch.sym_max(b * 2, 2)", "float": " * (torch.sym_float(b) / 2)",
             "bool": " * (b > 1)"}
EDIT_TEXT = {"none": "", "dead_subgraphs": "\nthen a pass made the graph return its input and ran "
             "eliminate_dead_code(): the removed higher-order ops' subgraphs stay behind as attributes",
             "unread_get_attrs": "\nthen a pass made the graph return its input and erased the call nodes nothing "
             "read, without eliminate_dead_code(): the get_attr nodes of the removed higher-order ops' subgraphs "
             "stay in the graph, read by no node",
             "unread_node": "\nthen a pass added an aten.t.default node that no node reads (it has not run "
             "eliminate_dead_code() yet), in the innermost subgraph the first higher-order op calls (in the graph "
             "itself when it has none)",
             "unread_hops": "\nthen a pass made the graph return its input and erased the call nodes nothing read, "
             "except higher-order ops (repeatedly, without eliminate_dead_code()): each higher-order op it reached stays, "
             "read by no node, and still calls its subgraphs",
             "subgraphs_as_keywords": "\nthen a pass rewrote every cond node, in subgraphs too, to take its branches "
             "and operands as keyword arguments: cond(pred, true_fn=..., false_fn=..., operands=...)",
             "partitioned": "\nthen a partitioner (CapabilityBasedPartitioner.partition_and_fuse) fused the tensor "
                            "call_functions into call_module GraphModules fused_N"}


def describe_program(program: tuple) -> str:
    _, body, sizes, method, dynamic, edit = program
    how = method + (" with a symbolic batch size b" if dynamic else "")
    result = ("aten.mul.Tensor(h, x.numel())" if sizes == "numel"
              else f"h{describe_sizes(sizes)} (b = x.shape[0])")
    return (f"program: x of shape ({BATCH}, {WIDTH}); h = {describe_body(body)}; return {result}"
            f"\ncaptured with: {how}{EDIT_TEXT[edit]}")


# --- flex_attention: a subgraph inside a tuple argument ---------------------------------------------------------

# (score_mod, mask_mod, capture): score_mod is a direct argument of the flex_attention node ("none": the identity,
# no ops; "core": score * 2), mask_mod sits inside the block-mask tuple argument ("core": |q - kv| <= 4;
# "not_core": floor_divide(q, 4) == floor_divide(kv, 4), aten.floor_divide is not core). The top-level graph holds
# only the flex_attention node and getitems, so the subgraphs alone decide.
FLEX_CASES = tuple((score, mask, method) for score in ("none", "core") for mask in ("core", "not_core")
                   for method in ("export", "make_fx"))
FLEX_SIDE = 16  # query and key length, and the block size: one block


def _flex_mask(mask: str):
    if mask == "core":
        return lambda b, h, q, kv: (q - kv).abs() <= 4
    return lambda b, h, q, kv: torch.floor_divide(q, 4) == torch.floor_divide(kv, 4)


@functools.lru_cache(maxsize=8)
def flex_graph(score: str, mask: str, method: str) -> torch.fx.GraphModule:
    """flex_attention(q, k, v, score_mod=..., block_mask=...) captured with `method` (see FLEX_CASES)."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    from katas.common import capture

    block_mask = create_block_mask(_flex_mask(mask), None, None, FLEX_SIDE, FLEX_SIDE, device="cpu",
                                   BLOCK_SIZE=FLEX_SIDE)
    score_mod = None if score == "none" else (lambda s, b, h, q, kv: s * 2)

    class Flex(nn.Module):
        def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask)

    q = torch.randn(1, 1, FLEX_SIDE, 8, generator=torch.Generator().manual_seed(2))
    return capture(Flex().eval(), (q, q, q), method).gm


def describe_flex(score: str, mask: str, method: str) -> str:
    mod = {"none": "none (no ops)", "core": "lambda s, b, h, q, kv: s * 2 (aten.mul: core)"}[score]
    cut = {"core": "(q - kv).abs() <= 4 (sub, abs, le: core)",
           "not_core": "floor_divide(q, 4) == floor_divide(kv, 4) (aten.floor_divide: not core)"}[mask]
    return (f"flex_attention(q, k, v, score_mod={mod}, block_mask=create_block_mask({cut}, ...)) captured with "
            f"{method}: score_mod's subgraph is a direct argument of the flex_attention node, mask_mod's sits inside "
            f"its block-mask tuple argument")


# --- functorch transforms: export records their bookkeeping as calls to torch._functorch.predispatch ------------

# case -> (what forward does, the dialect of its export). "vmap_core": torch.vmap of core ops; "vmap_linear": a Linear
# under torch.vmap (aten.linear, not core); "jvp": torch.func.jvp (aten._make_dual and _unpack_dual, not core);
# "block_mask": create_block_mask inside forward (it calls torch.vmap), then flex_attention with that mask.
FUNCTORCH_CASES = {
    "vmap_core": "torch.vmap(lambda row: relu(row) * 2)(x) + x",
    "vmap_linear": "torch.vmap(lambda row: Linear(relu(row)))(x)",
    "jvp": "torch.func.jvp(lambda t: relu(t) * 2, (x,), (torch.ones_like(x),))[1]",
    "block_mask": f"flex_attention(q, q, q, block_mask=create_block_mask(causal, None, None, {FLEX_SIDE}, {FLEX_SIDE})) "
                  f"with the block mask built inside forward",
}


class FunctorchModel(nn.Module):
    def __init__(self, case: str) -> None:
        super().__init__()
        self.case = case
        with torch.random.fork_rng():
            torch.manual_seed(0)
            self.lin = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.case == "vmap_core":
            return torch.vmap(lambda row: torch.relu(row) * 2)(x) + x
        if self.case == "vmap_linear":
            return torch.vmap(lambda row: self.lin(torch.relu(row)))(x)
        if self.case == "jvp":
            return torch.func.jvp(lambda t: torch.relu(t) * 2, (x,), (torch.ones_like(x),))[1]
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        block_mask = create_block_mask(lambda b, h, q, kv: q >= kv, None, None, FLEX_SIDE, FLEX_SIDE, device="cpu",
                                       BLOCK_SIZE=FLEX_SIDE)
        return flex_attention(x, x, x, block_mask=block_mask)


@functools.lru_cache(maxsize=8)
def functorch_graph(case: str, method: str) -> torch.fx.GraphModule:
    """FunctorchModel(case) captured with `method` (never edit what it returns)."""
    from katas.common import capture

    x = (torch.randn(1, 1, FLEX_SIDE, 8, generator=torch.Generator().manual_seed(2)) if case == "block_mask"
         else example_input())
    return capture(FunctorchModel(case).eval(), (x,), method).gm


def describe_functorch(case: str, method: str) -> str:
    return f"forward: {FUNCTORCH_CASES[case]}\ncaptured with: {method}"
