"""Mistake: a view -> addmm/mm -> view -> gelu sandwich is taken to always flatten and restore the same batch,
so both views are dropped without proving it from the shapes. A hand-written
gelu((x.reshape(-1, 4) @ w.t()).reshape(3, -1, 5)) regroups the batch, and a product of relu(x.reshape(-1, 4)) has
no input view at all: the fused result then comes out with the wrong shape (blind round k03-r1,
wrong_unproven_view_drop; the road is the round's correct_drop_views)."""
from __future__ import annotations

import math
import operator

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

from katas.common.ops import LINEAR_GELU

KILLED_BY = ("random_pair_programs", "reshape_that_regroups_or_no_input_view_keeps_its_shape")

aten = torch.ops.aten
_VIEWS = (aten.view.default, aten._unsafe_view.default, aten.reshape.default)
_META_KEYS = ("val", "example_value")


def _val(node):
    if not isinstance(node, torch.fx.Node):
        return None
    for key in _META_KEYS:
        v = node.meta.get(key)
        if isinstance(v, torch.Tensor):
            return v
    return None


def _same(a, b) -> bool:
    try:
        from torch.fx.experimental.symbolic_shapes import statically_known_true
        return bool(statically_known_true(a == b))
    except Exception:
        return False


def _is_module(gm, node, base) -> bool:
    if node.op != "call_module":
        return False
    try:
        mod = gm.get_submodule(node.target)
    except AttributeError:
        return False
    return isinstance(mod, base) and type(mod).forward is base.forward


def _gelu_approx(gm, node):
    """'none'/'tanh' if `node` is a GELU, else None."""
    if node.op == "call_module":
        if _is_module(gm, node, nn.GELU):
            return gm.get_submodule(node.target).approximate
        return None
    if node.op == "call_function" and node.target in (F.gelu, aten.gelu.default):
        if len(node.args) > 1:
            return node.args[1]
        return node.kwargs.get("approximate", "none")
    return None


def _gelu_input(node):
    return node.args[0] if node.args else node.kwargs.get("input", node.kwargs.get("self"))


def _transposed_weight(wt):
    if not isinstance(wt, torch.fx.Node) or wt.op != "call_function":
        return None
    if wt.target == aten.t.default:
        return wt.args[0]
    if wt.target == aten.permute.default:
        dims = wt.args[1] if len(wt.args) > 1 else wt.kwargs.get("dims")
        if [d % 2 for d in dims] == [1, 0]:  # [-1, -2] transposes too
            return wt.args[0]
    return None


class _Linear:
    """One Linear found in the graph: its node, and how to read its operands at rewrite time."""

    def __init__(self, node, kind, wt=None):
        self.node, self.kind, self.wt = node, kind, wt

    def operands(self, gm):
        n = self.node
        if self.kind == "module":
            mod = gm.get_submodule(n.target)
            x = n.args[0] if n.args else n.kwargs["input"]
            return x, ("module", n.target, mod.bias is not None)
        if self.kind == "function":
            names = ("input", "weight", "bias")
            vals = list(n.args) + [None] * (3 - len(n.args))
            for i, name in enumerate(names):
                if i >= len(n.args) and name in n.kwargs:
                    vals[i] = n.kwargs[name]
            return vals[0], (vals[1], vals[2])
        if self.kind == "addmm":
            return n.args[1], (_transposed_weight(n.args[2]), n.args[0])
        return n.args[0], (_transposed_weight(n.args[1]), None)  # mm


def _as_linear(gm, node):
    if node.op == "call_module":
        return _Linear(node, "module") if _is_module(gm, node, nn.Linear) else None
    if node.op != "call_function":
        return None
    if node.target in (F.linear, aten.linear.default):
        return _Linear(node, "function")
    if node.target == aten.addmm.default:
        if len(node.args) != 3:
            return None
        if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
            return None
        if _transposed_weight(node.args[2]) is None:
            return None
        return _Linear(node, "addmm")
    if node.target == aten.mm.default:
        if len(node.args) != 2 or _transposed_weight(node.args[1]) is None:
            return None
        return _Linear(node, "mm")
    return None


def _find(gm):
    matches = []
    for node in gm.graph.nodes:
        lin = _as_linear(gm, node)
        if lin is None or len(node.users) != 1:
            continue
        (nxt,) = node.users
        view = None
        if lin.kind in ("addmm", "mm") and nxt.op == "call_function" and nxt.target in _VIEWS \
                and nxt.args[0] is node:
            view = nxt
            if len(view.users) != 1:
                continue
            (nxt,) = view.users
        approx = _gelu_approx(gm, nxt)
        if approx is None or _gelu_input(nxt) is not (view or node):
            continue
        matches.append((lin, view, nxt, approx))
    return matches


def _flatten_source(mat, gelu):
    """If `mat` is view(x_nd, [prod(batch), in]) and the GELU has shape (*batch, out), return x_nd."""
    if not (isinstance(mat, torch.fx.Node) and mat.op == "call_function" and mat.target in _VIEWS):
        return None
    return mat.args[0]
    src = mat.args[0]
    vs, vm, vg = _val(src), _val(mat), _val(gelu)
    if vs is None or vm is None or vg is None or vs.dim() < 2 or vm.dim() != 2:
        return None
    if vs.dim() != vg.dim():
        return None
    if not _same(vs.shape[-1], vm.shape[-1]):
        return None
    if not all(_same(a, b) for a, b in zip(vs.shape[:-1], vg.shape[:-1])):
        return None
    if not _same(math.prod(vs.shape[:-1]), vm.shape[0]):
        return None
    return src


def _erase_if_dead(graph, nodes):
    """Erase nodes our rewrite left without readers, and, in turn, their inputs that became unread."""
    todo = list(nodes)
    while todo:
        n = todo.pop()
        if n.graph is not graph or n.op != "call_function" or len(n.users) or n.is_impure():
            continue
        if getattr(n, "_erased", False):
            continue
        inputs = list(n.all_input_nodes)
        graph.erase_node(n)
        n._erased = True
        todo.extend(inputs)


def fuse_linear_gelu(gm: torch.fx.GraphModule) -> int:
    graph = gm.graph
    matches = _find(gm)
    for lin, view, gelu, approx in matches:
        x, ops = lin.operands(gm)
        drop_from = None
        if view is not None:
            src = _flatten_source(x, gelu)
            if src is not None:
                drop_from, x = x, src
        anchor = gelu if (view is None or drop_from is not None) else view
        with graph.inserting_before(anchor):
            if ops[0] == "module":
                _, target, has_bias = ops
                w = graph.get_attr(f"{target}.weight")
                b = graph.get_attr(f"{target}.bias") if has_bias else None
            else:
                w, b = ops
            fused = graph.call_function(LINEAR_GELU, (x, w, b), {"approximate": approx})
        leftovers = [a for a in lin.node.all_input_nodes]
        if view is None:
            source_meta = lin.node
            gelu.replace_all_uses_with(fused)
            graph.erase_node(gelu)
            graph.erase_node(lin.node)
        elif drop_from is not None:
            source_meta = gelu
            gelu.replace_all_uses_with(fused)
            leftovers += list(view.all_input_nodes) + list(drop_from.all_input_nodes) + [drop_from]
            graph.erase_node(gelu)
            graph.erase_node(view)
            graph.erase_node(lin.node)
        else:
            source_meta = lin.node
            view.replace_input_with(lin.node, fused)
            gelu.replace_all_uses_with(view)
            graph.erase_node(gelu)
            graph.erase_node(lin.node)
        for key in _META_KEYS:
            if key in source_meta.meta:
                fused.meta[key] = source_meta.meta[key]
        _erase_if_dead(graph, [n for n in leftovers if n is not fused])
    graph.lint()
    gm.recompile()
    return len(matches)


# The report is the reference's: this file is about the pass.
from checker.kit import load_reference as _load_reference  # noqa: E402

unfused_pairs = _load_reference("03_fusion_guard", "fusion.py").unfused_pairs
