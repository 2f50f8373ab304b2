"""Mistake: when the view sandwich is dropped (the fused op takes the N-D input), the views' size arithmetic goes
with them, erased without asking whether another node still reads it. Under a symbolic batch two Linears on one input
share those nodes (export with a Dim: one sym_size.int(x, 0) and its operator.mul feed both products' views), so the
pass erases a node the other pair's views still read, and raises. The lesson: "If you drop the views, drop the size
arithmetic that only they read (a size node another view or op still reads stays: two Linears on one input share
them ...)". The road is the round's correct_a (drops the views after a statically_known_true proof); only the erasure
differs (blind round k03-r4, wrong_erase_size_unconditional)."""
from __future__ import annotations

import operator

import torch
import torch.fx
import torch.nn as nn
from torch.fx.experimental.symbolic_shapes import statically_known_true

from katas.common.ops import LINEAR_GELU

KILLED_BY = ("symbolic_batch_view_sandwich_fuses",)

aten = torch.ops.aten
_F_GELU = torch._C._nn.gelu
_F_LINEAR = torch._C._nn.linear
_VIEWS = (aten.view.default, aten._unsafe_view.default)
_META_KEYS = ("val", "example_value")


def _arg(node, i, name, default=None):
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


def _module_of(gm, node):
    try:
        return gm.get_submodule(node.target)
    except AttributeError:
        return None


def _keeps_forward(module, base):
    return isinstance(module, base) and type(module).forward is base.forward


def _gelu_mode(gm, node):
    """`approximate` of a GELU node, or None when the node is no GELU."""
    if node.op == "call_module":
        m = _module_of(gm, node)
        if m is not None and _keeps_forward(m, nn.GELU):
            return m.approximate
        return None
    if node.op == "call_function" and node.target in (_F_GELU, aten.gelu.default):
        return _arg(node, 1, "approximate", "none")
    return None


def _transposed_weight(node):
    """`w` when `node` is a 2-D transpose of `w` (t, permute [1,0] mod 2, transpose(0,1)), else None."""
    if not isinstance(node, torch.fx.Node) or node.op != "call_function":
        return None
    if node.target == aten.t.default:
        return node.args[0]
    if node.target == aten.permute.default:
        dims = _arg(node, 1, "dims")
        if len(dims) == 2 and [d % 2 for d in dims] == [1, 0]:
            return node.args[0]
        return None
    if node.target == aten.transpose.int:
        d0, d1 = _arg(node, 1, "dim0"), _arg(node, 2, "dim1")
        if {d0 % 2, d1 % 2} == {0, 1}:
            return node.args[0]
    return None


def _is_one(v):
    return v == 1


def _linear_parts(gm, node):
    """(kind, x, weight, bias) of a Linear node, or None. For MODULE Linears weight/bias are the module's."""
    if node.op == "call_module":
        m = _module_of(gm, node)
        if m is not None and _keeps_forward(m, nn.Linear):
            return ("module", _arg(node, 0, "input"), None, None)
        return None
    if node.op != "call_function":
        return None
    if node.target in (_F_LINEAR, aten.linear.default):
        return ("linear", _arg(node, 0, "input"), _arg(node, 1, "weight"), _arg(node, 2, "bias"))
    if node.target == aten.addmm.default:
        if not (_is_one(node.kwargs.get("beta", 1)) and _is_one(node.kwargs.get("alpha", 1))):
            return None
        w = _transposed_weight(node.args[2])
        if w is None:
            return None
        return ("addmm", node.args[1], w, node.args[0])
    if node.target == aten.mm.default:
        w = _transposed_weight(node.args[1])
        if w is None:
            return None
        return ("mm", node.args[0], w, None)
    return None


def _shape(node):
    if not isinstance(node, torch.fx.Node):
        return None
    for k in _META_KEYS:
        v = node.meta.get(k)
        if isinstance(v, torch.Tensor):
            return tuple(v.shape)
    return None


def _same(a, b):
    return statically_known_true(a == b)


def _views_only_flatten(in_view, out_view):
    """True when `in_view` flattens an N-D input to [N, in] and `out_view` restores its leading dims."""
    if in_view.op != "call_function" or in_view.target not in _VIEWS:
        return False
    src = in_view.args[0]
    s, f, o = _shape(src), _shape(in_view), _shape(out_view)
    if s is None or f is None or o is None or len(s) < 2 or len(f) != 2:
        return False
    if not _same(s[-1], f[-1]):
        return False
    if len(o) != len(s):
        return False
    return all(_same(a, b) for a, b in zip(s[:-1], o[:-1]))


def _find_matches(gm):
    matches = []
    for gelu in gm.graph.nodes:
        approx = _gelu_mode(gm, gelu)
        if approx is None or not gelu.args or not isinstance(gelu.args[0], torch.fx.Node):
            continue
        src = gelu.args[0]
        out_view = None
        if src.op == "call_function" and src.target in _VIEWS:
            out_view, src = src, src.args[0]
            if list(out_view.users) != [gelu]:
                continue
        if not isinstance(src, torch.fx.Node):
            continue
        parts = _linear_parts(gm, src)
        if parts is None:
            continue
        if out_view is not None and parts[0] not in ("addmm", "mm"):
            continue
        if list(src.users) != [out_view or gelu]:
            continue
        matches.append((src, out_view, gelu, approx))
    return matches


def _meta_value(node):
    return {k: node.meta[k] for k in _META_KEYS if k in node.meta}


def _removable(node):
    if node.op not in ("call_function", "get_attr") or node.users:
        return False
    if node.is_impure():
        return False
    name = getattr(node.target, "__name__", str(node.target))
    if name.endswith("_") and not name.startswith("_"):
        return False
    schema = getattr(node.target, "_schema", None)
    if schema is not None and schema.is_mutable:
        return False
    return True


def fuse_linear_gelu(gm: torch.fx.GraphModule) -> int:
    graph = gm.graph
    matches = _find_matches(gm)
    erased_inputs = []
    for linear, out_view, gelu, approx in matches:
        kind, x, w, b = _linear_parts(gm, linear)  # read now: an earlier rewrite may have replaced x
        in_view = x if out_view is not None else None
        drop = in_view is not None and isinstance(in_view, torch.fx.Node) and _views_only_flatten(in_view, out_view)
        anchor = gelu if drop or out_view is None else out_view
        with graph.inserting_before(anchor):
            if kind == "module":
                module = gm.get_submodule(linear.target)
                w = graph.get_attr(f"{linear.target}.weight")
                b = graph.get_attr(f"{linear.target}.bias") if module.bias is not None else None
            fused_x = in_view.args[0] if drop else x
            fused = graph.call_function(LINEAR_GELU, (fused_x, w, b), {"approximate": approx})
        if drop or out_view is None:
            fused.meta.update(_meta_value(gelu))
            gelu.replace_all_uses_with(fused)
            dead = [gelu] + ([out_view] if out_view is not None else []) + [linear]
        else:
            fused.meta.update(_meta_value(linear))
            out_view.replace_input_with(linear, fused)
            gelu.replace_all_uses_with(out_view)
            dead = [gelu, linear]
        for n in dead:
            erased_inputs.extend(n.all_input_nodes)
            graph.erase_node(n)
        if drop:
            sizes = [a for v in (in_view, out_view) for a in v.args[1] if isinstance(a, torch.fx.Node)]
            graph.erase_node(in_view)
            for s in sizes:  # the views are gone, so is their size arithmetic
                while s is not None and not getattr(s, "_erased", False) and s.op == "call_function":
                    nxt = s.args[0] if s.args and isinstance(s.args[0], torch.fx.Node) else None
                    graph.erase_node(s)
                    s = nxt
    work = list(erased_inputs)
    while work:
        n = work.pop()
        if getattr(n, "_erased", False):
            continue
        if _removable(n):
            work.extend(n.all_input_nodes)
            graph.erase_node(n)
    graph.lint()
    gm.recompile()
    return len(matches)


# The report is the reference's: this file is about the pass.
from checker.kit import load_reference as _load_reference  # noqa: E402

unfused_pairs = _load_reference("03_fusion_guard", "fusion.py").unfused_pairs
