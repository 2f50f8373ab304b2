"""Mistake: the views "only flatten and restore" when the output view gives back the input's leading dims; what
the input view does to the last dim is not checked. `x.reshape(-1, 4)` of a (2, 3, 8) input splits each row in two
(the weight reads 4 features), and the product comes back as (2, 3, 10): dropping both views then hands the fused
op an x of 8 features for a weight of 4, and the graph fails to run (blind round k03-r2,
wrong_views_unproven_lastdim; the road is the round's correct_dropviews)."""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import torch
import torch.fx
import torch.nn as nn
from torch.fx.experimental.symbolic_shapes import statically_known_true

from katas.common.ops import LINEAR_GELU

KILLED_BY = ("random_pair_programs", "reshape_that_regroups_or_no_input_view_keeps_its_shape")

aten = torch.ops.aten
FUNCTIONAL_LINEAR = torch._C._nn.linear   # F.linear
FUNCTIONAL_GELU = torch._C._nn.gelu       # F.gelu
VIEWS = (aten.view.default, aten._unsafe_view.default)
META_KEYS = ("val", "example_value")


def _keeps_forward(module: Any, base: type) -> bool:
    return isinstance(module, base) and type(module).forward is base.forward


def _module(gm: torch.fx.GraphModule, node: torch.fx.Node):
    try:
        return gm.get_submodule(node.target)
    except AttributeError:
        return None


def _arg(node: torch.fx.Node, pos: int, name: str, default=None):
    if len(node.args) > pos:
        return node.args[pos]
    return node.kwargs.get(name, default)


def gelu_info(gm, node) -> Optional[tuple[torch.fx.Node, str]]:
    """(input node, approximate) if `node` is a GELU, else None."""
    if node.op == "call_module":
        mod = _module(gm, node)
        if mod is None or not _keeps_forward(mod, nn.GELU):
            return None
        src = _arg(node, 0, "input")
        return (src, mod.approximate) if isinstance(src, torch.fx.Node) else None
    if node.op == "call_function" and node.target in (FUNCTIONAL_GELU, aten.gelu.default):
        src = _arg(node, 0, "input") if node.target is FUNCTIONAL_GELU else _arg(node, 0, "self")
        if not isinstance(src, torch.fx.Node):
            return None
        return src, node.kwargs.get("approximate", "none")
    return None


def _transposed_weight(wt) -> Optional[torch.fx.Node]:
    """w if `wt` is t(w) or permute(w, [1, 0]) (dims taken modulo 2), else None."""
    if not isinstance(wt, torch.fx.Node) or wt.op != "call_function":
        return None
    if wt.target is aten.t.default:
        return wt.args[0]
    if wt.target is aten.permute.default:
        dims = list(_arg(wt, 1, "dims"))
        if len(dims) == 2 and [d % 2 for d in dims] == [1, 0]:
            return wt.args[0]
    return None


class Linear(NamedTuple):
    kind: str                      # "module" | "function" | "product"
    node: torch.fx.Node


def linear_kind(gm, node) -> Optional[str]:
    if node.op == "call_module":
        return "module" if _keeps_forward(_module(gm, node), nn.Linear) else None
    if node.op != "call_function":
        return None
    if node.target in (FUNCTIONAL_LINEAR, aten.linear.default):
        return "function"
    if node.target is aten.addmm.default:
        if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
            return None
        return "product" if _transposed_weight(node.args[2]) is not None else None
    if node.target is aten.mm.default:
        return "product" if _transposed_weight(node.args[1]) is not None else None
    return None


def operands(gm, kind, node, new_nodes: list):
    """(x, weight, bias) of a Linear node, read now."""
    if kind == "module":
        x = _arg(node, 0, "input")
        w = gm.graph.get_attr(f"{node.target}.weight")
        new_nodes.append(w)
        b = None
        if _module(gm, node).bias is not None:
            b = gm.graph.get_attr(f"{node.target}.bias")
            new_nodes.append(b)
        return x, w, b
    if kind == "function":
        return _arg(node, 0, "input"), _arg(node, 1, "weight"), _arg(node, 2, "bias")
    if node.target is aten.addmm.default:
        return node.args[1], _transposed_weight(node.args[2]), node.args[0]
    return node.args[0], _transposed_weight(node.args[1]), None


def _val(node):
    if not isinstance(node, torch.fx.Node):
        return None
    for key in META_KEYS:
        if key in node.meta:
            return node.meta[key]
    return None


def _same(a, b) -> bool:
    return statically_known_true(a == b)


def _views_only_flatten(in_view, out_view) -> bool:
    """in_view = view(src, [N, in]), out_view = view(product, [*batch, out]) with src: [*batch, in]."""
    if in_view is None or out_view is None:
        return False
    src = _val(in_view.args[0])
    flat, restored = _val(in_view), _val(out_view)
    if not all(isinstance(t, torch.Tensor) for t in (src, flat, restored)):
        return False
    if flat.dim() != 2 or src.dim() < 1 or restored.dim() != src.dim():
        return False
    return all(_same(a, b) for a, b in zip(src.shape[:-1], restored.shape[:-1]))


class Match(NamedTuple):
    kind: str
    linear: torch.fx.Node
    out_view: Optional[torch.fx.Node]
    gelu: torch.fx.Node
    approximate: str
    drop_views: bool


def find_matches(gm) -> list[Match]:
    matches = []
    for node in gm.graph.nodes:
        info = gelu_info(gm, node)
        if info is None:
            continue
        src, approximate = info
        out_view = None
        if src.op == "call_function" and src.target in VIEWS:
            out_view, src = src, src.args[0]
            if not isinstance(src, torch.fx.Node):
                continue
        kind = linear_kind(gm, src)
        if kind is None:
            continue
        if out_view is not None and kind != "product":
            continue  # a view between a whole Linear and the GELU is not this kata's sandwich
        # the guard: every node between the Linear and the GELU is read by the next one alone
        if out_view is not None:
            if list(src.users) != [out_view] or list(out_view.users) != [node]:
                continue
        elif list(src.users) != [node]:
            continue
        drop = False
        if out_view is not None:
            x = src.args[1] if src.target is aten.addmm.default else src.args[0]
            in_view = x if isinstance(x, torch.fx.Node) and x.op == "call_function" and x.target in VIEWS else None
            drop = _views_only_flatten(in_view, out_view)
        matches.append(Match(kind, src, out_view, node, approximate, drop))
    return matches


def _erase_if_dead(graph, candidates):
    """Erase the nodes among `candidates` (and, recursively, their inputs) that are now without users."""
    stack = [c for c in candidates if isinstance(c, torch.fx.Node)]
    while stack:
        n = stack.pop()
        if n._erased or n.users or n.op in ("placeholder", "output"):
            continue
        if n.is_impure():
            continue
        inputs = list(n.all_input_nodes)
        graph.erase_node(n)
        stack.extend(inputs)


def fuse_linear_gelu(gm: torch.fx.GraphModule) -> int:
    graph = gm.graph
    matches = find_matches(gm)
    for m in matches:
        new_nodes: list = []
        with graph.inserting_before(m.out_view or m.gelu):
            x, w, b = operands(gm, m.kind, m.linear, new_nodes)
            in_view = None
            if m.drop_views:
                in_view = x
                x = in_view.args[0]
            fused = graph.call_function(LINEAR_GELU, (x, w, b), {"approximate": m.approximate})
        meta_from = m.gelu if m.drop_views else m.linear
        for key in META_KEYS:
            if key in meta_from.meta:
                fused.meta[key] = meta_from.meta[key]
        old_inputs = list(m.linear.all_input_nodes)
        if m.out_view is not None and not m.drop_views:
            m.out_view.replace_input_with(m.linear, fused)
            m.gelu.replace_all_uses_with(m.out_view)
            graph.erase_node(m.gelu)
            graph.erase_node(m.linear)
            _erase_if_dead(graph, old_inputs)
        else:
            m.gelu.replace_all_uses_with(fused)
            graph.erase_node(m.gelu)
            if m.out_view is not None:
                old_inputs += list(m.out_view.all_input_nodes)
                graph.erase_node(m.out_view)
            graph.erase_node(m.linear)
            _erase_if_dead(graph, old_inputs + ([in_view] if in_view is not None else []))
    graph.lint()
    gm.recompile()
    return len(matches)


# The report is the reference's: this file is about the pass.
from checker.kit import load_reference as _load_reference  # noqa: E402

unfused_pairs = _load_reference("03_fusion_guard", "fusion.py").unfused_pairs
