"""Mistake: core-ness is read off the op's packet (any overload tagged core makes the op core), while it belongs
to each overload: aten.sum.dim_IntList is core, aten.sum.default is not."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = ("functorch_bookkeeping_is_neutral", "overloads_split_by_core_tag")


def _packet_is_core(packet):
    return any(torch.Tag.core in getattr(packet, name).tags for name in packet.overloads())


def node_dialect(node):
    dialect = _right_node_dialect(node)
    if dialect == Dialect.ATEN and _packet_is_core(node.target.overloadpacket):
        return Dialect.CORE_ATEN
    return dialect


# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
