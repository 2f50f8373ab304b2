"""Pictures of FX graphs (`make graph N=k`): what a kata's sample graph looks like as captured, after the
attempt's transform and after the reference's, in one self-contained HTML page of inline SVG.

A kata's hidden/sample.py builds the pictures (`graph_pictures(attempt, reference, capture, model)` returns
Panels, see below) from the graphs its functions produce, in the same child process as `make diff`'s sample.
This module turns them into data that crosses the process boundary (plain dicts), lays them out and draws
them. Layout is grandalf's Sugiyama layered layout: a pure-Python package from the package index (no system
Graphviz), which layers a graph top to bottom along its data flow and orders each layer to keep edges from
crossing, as `dot` does; every FX graph is a DAG, its home ground. `text_of` is the same picture for a terminal.
"""
from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

# Colours of node kinds, shared by every kata's pictures (a kind not listed is drawn grey).
KIND_COLOURS = {
    "module": "#9ecae1", "torch": "#fdd0a2", "aten": "#c7e9c0", "core_aten": "#74c476", "neutral": "#eeeeee",
    "mixed": "#fbb4b9", "error": "#ff6b6b",
    "npu": "#fdae6b", "cpu": "#c6dbef",
    "fused": "#b39ddb", "refused": "#ffe082", "missed": "#ffab91", "safe": "#a1d99b", "io": "#ffffff", "symbolic": "#fff59d",
    "grad_mode": "#80deea", "qdq": "#fff3e0",
}
KIND_WORDS = {
    "module": "module dialect", "torch": "torch dialect", "aten": "aten dialect", "core_aten": "core aten dialect",
    "neutral": "neutral (no op, or shape arithmetic)", "error": "raised an error", "npu": "runs on the NPU",
    "cpu": "runs on the CPU", "fused": "fused linear+gelu", "refused": "pair left alone by the guard (why: badge)",
    "missed": "a safe pair not fused", "safe": "a safe pair: a pass should fuse it", "io": "input, output or constant",
    "symbolic": "an input with a symbolic size or value (SymInt)",
    "grad_mode": "a grad-mode switch: a `with torch.no_grad():` block begins or ends",
    "qdq": "quantize or dequantize: where values cross between int8 and float",
}
NODE_W, NODE_H, NOTE_H, GAP_X, GAP_Y, MARGIN = 200, 44, 14, 30, 40, 20
NAME_CHARS, LABEL_CHARS, NOTE_CHARS = 26, 34, 36  # what fits a box's width at its font sizes (the tooltip has it all)
DIFFERS_STROKE = "#d81b60"  # the outline of a node where the attempt's graph is not the reference's


@dataclass
class PNode:
    name: str
    label: str  # second line: op and target
    kind: str = "neutral"
    note: str = ""  # a badge: why a pair was refused, what the reference says instead
    group: str = ""  # the partition it belongs to, if any


@dataclass
class PEdge:
    src: str
    dst: str
    crossing: bool = False  # between a partition and the host, or two partitions: a transfer


@dataclass
class Picture:
    title: str
    nodes: list[PNode]
    edges: list[PEdge]
    caption: str = ""

    @property
    def transfers(self) -> int:
        return sum(edge.crossing for edge in self.edges)

    @property
    def on_device(self) -> bool:
        """Whether anything here runs on the NPU (only then are transfers worth counting)."""
        return any(n.kind == "npu" or n.group for n in self.nodes)

    def node_height(self) -> float:
        """Every box is as tall as the tallest needs: a badge is a third line inside the box, never over an arrow."""
        return NODE_H + (NOTE_H if any(n.note for n in self.nodes) else 0)


def differences(attempt: Picture, reference: Picture) -> tuple[set[str], list[str]]:
    """Where the attempt's picture is not the reference's: the names of the attempt's nodes that the reference
    lacks or draws otherwise (its op and target, kind, badge, partition or inputs), and the names of the
    reference's nodes the attempt lacks. Nodes are matched by name: both sides start from the same capture."""
    def signature(picture: Picture) -> dict[str, tuple]:
        inputs: dict[str, list[str]] = {}
        for edge in picture.edges:
            inputs.setdefault(edge.dst, []).append(edge.src)
        return {n.name: (n.label, n.kind, n.note, bool(n.group), tuple(sorted(inputs.get(n.name, []))))
                for n in picture.nodes}

    mine, theirs = signature(attempt), signature(reference)
    differ = {name for name, sig in mine.items() if theirs.get(name) != sig}
    return differ, [name for name in theirs if name not in mine]


@dataclass
class Panel:
    """One row of the page: the graph as captured (optional), and beside it the attempt's and the reference's
    version of it. A side is a Picture, or a line saying why there is none (not implemented, an error)."""

    title: str
    attempt: Picture | str
    reference: Picture | str
    before: Picture | None = None
    notes: list[str] = field(default_factory=list)


# --- building pictures from FX graphs ---------------------------------------------------------------------

def target_text(node: Any) -> str:
    from katas.common.naming import target_name

    if node.op == "placeholder":
        return "placeholder"
    if node.op == "output":
        return "output"
    if node.op == "get_attr":
        return f"get_attr {node.target}"
    if node.op == "call_module":
        return f"call_module {node.target}"
    return f"{node.op.replace('call_', '')} {target_name(node.target)}"


def picture_of(gm: Any, title: str, *, kind_of: Callable[[Any], str] | None = None,
               note_of: Callable[[Any], str] | None = None, group_of: Callable[[Any], str] | None = None,
               caption: str = "") -> Picture:
    """A Picture of `gm`'s graph: one node per FX node, one edge per input. `kind_of(node)` picks its colour
    (placeholders and the output are "io" unless it says otherwise), `note_of` its badge, `group_of` its
    partition; an edge between different groups, where one is a partition, is a transfer."""
    nodes, edges, groups = [], [], {}
    for node in gm.graph.nodes:
        kind = kind_of(node) if kind_of else ""
        if not kind:
            kind = "io" if node.op in ("placeholder", "output") else "neutral"
        groups[node.name] = group_of(node) if group_of else ""
        nodes.append(PNode(node.name, target_text(node), kind, note_of(node) if note_of else "", groups[node.name]))
        for source in dict.fromkeys(node.all_input_nodes):
            crossing = groups.get(source.name, "") != groups[node.name]
            edges.append(PEdge(source.name, node.name, crossing))
    return Picture(title, nodes, edges, caption)


def flattened_partitions(gm: Any, title: str, *, is_partition: Callable[[str, Any], bool], caption: str = "",
                         host_kind: Callable[[Any], str] | None = None,
                         note_of: Callable[[Any], str] | None = None) -> Picture:
    """A Picture of a partitioned graph with each partition's nodes drawn in place of its call_module node,
    grouped under the partition's name. Nodes outside partitions run on the host ("cpu", or `host_kind`);
    an edge into or out of a partition is a host<->device transfer. `note_of(node)` badges a host node (what
    an input is, say)."""
    import torch.fx

    nodes: list[PNode] = []
    edges: list[PEdge] = []
    producer: dict[str, str] = {}  # top-level node name -> the drawn node that produces its value
    outputs_of: dict[str, list[str]] = {}
    for node in gm.graph.nodes:
        sub = gm.get_submodule(node.target) if node.op == "call_module" else None
        if isinstance(sub, torch.fx.GraphModule) and is_partition(str(node.target), sub):
            inner_inputs = [n for n in sub.graph.nodes if n.op == "placeholder"]
            renamed = {}
            for inner in sub.graph.nodes:
                if inner.op in ("placeholder", "output"):
                    continue
                drawn = f"{node.target}.{inner.name}"
                renamed[inner.name] = drawn
                nodes.append(PNode(drawn, target_text(inner), "npu", "", str(node.target)))
                for source in dict.fromkeys(inner.all_input_nodes):
                    if source.op == "placeholder":
                        outer = node.args[inner_inputs.index(source)] if inner_inputs.index(source) < len(node.args) else None
                        if isinstance(outer, torch.fx.Node):
                            edges.append(PEdge(producer.get(outer.name, outer.name), drawn, True))
                    else:
                        edges.append(PEdge(renamed[source.name], drawn, False))
            out = next(n for n in sub.graph.nodes if n.op == "output").args[0]
            flat = list(out) if isinstance(out, (tuple, list)) else [out]
            outputs_of[node.name] = [renamed.get(getattr(o, "name", ""), "") for o in flat]
            producer[node.name] = outputs_of[node.name][0] if len(flat) == 1 else node.name
            if len(flat) != 1:  # a tuple of results: getitem nodes on the host pick them
                nodes.append(PNode(node.name, f"results of {node.target}", "io", "", ""))
                edges += [PEdge(o, node.name, True) for o in outputs_of[node.name] if o]
            continue
        if node.op == "call_function" and getattr(node.target, "__name__", "") == "getitem" and \
                node.args and getattr(node.args[0], "name", None) in outputs_of:
            picked = outputs_of[node.args[0].name]
            index = node.args[1]
            if isinstance(index, int) and index < len(picked) and picked[index]:
                producer[node.name] = picked[index]
                continue
        kind = "io" if node.op in ("placeholder", "output", "get_attr") else (host_kind(node) if host_kind else "cpu")
        nodes.append(PNode(node.name, target_text(node), kind, note_of(node) if note_of else "", ""))
        on_device = {n.name for n in nodes if n.group}
        for source in dict.fromkeys(node.all_input_nodes):
            origin = producer.get(source.name, source.name)
            edges.append(PEdge(origin, node.name, origin in on_device))  # device -> host
    return Picture(title, nodes, edges, caption)


# --- crossing the process boundary --------------------------------------------------------------------------

def panels_to_data(panels: Iterable[Panel]) -> list[dict]:
    return [asdict(panel) for panel in panels]


def panels_from_data(data: list[dict]) -> list[Panel]:
    def side(value: Any) -> Picture | str | None:
        if value is None or isinstance(value, str):
            return value
        return Picture(value["title"], [PNode(**n) for n in value["nodes"]], [PEdge(**e) for e in value["edges"]],
                       value.get("caption", ""))

    return [Panel(p["title"], side(p["attempt"]), side(p["reference"]), side(p.get("before")), list(p.get("notes", [])))
            for p in data]


# --- layout and drawing -----------------------------------------------------------------------------------------

@dataclass
class _Box:
    x: float
    y: float
    w: float = NODE_W
    h: float = NODE_H


def layout(picture: Picture) -> tuple[dict[str, _Box], float, float]:
    """Top-left corner of every node (Sugiyama layers, top to bottom), and the drawing's width and height."""
    from grandalf.graphs import Edge, Graph, Vertex
    from grandalf.layouts import SugiyamaLayout

    node_h = picture.node_height()

    class _View:
        w, h, xy = NODE_W, node_h, (0.0, 0.0)

    vertices = {n.name: Vertex(n.name) for n in picture.nodes}
    for vertex in vertices.values():
        vertex.view = _View()
    links = [Edge(vertices[e.src], vertices[e.dst]) for e in picture.edges
             if e.src in vertices and e.dst in vertices and e.src != e.dst]
    graph = Graph(list(vertices.values()), links)
    boxes: dict[str, _Box] = {}
    offset_x, height = MARGIN, 0.0
    for component in graph.C:
        sugiyama = SugiyamaLayout(component)
        sugiyama.xspace, sugiyama.yspace = GAP_X, GAP_Y
        sugiyama.init_all()
        sugiyama.draw()
        xs = [v.view.xy[0] for v in component.sV]
        ys = [v.view.xy[1] for v in component.sV]
        left, top = min(xs) - NODE_W / 2, min(ys) - node_h / 2
        for vertex in component.sV:
            x, y = vertex.view.xy
            boxes[vertex.data] = _Box(offset_x + x - NODE_W / 2 - left, MARGIN + y - node_h / 2 - top, h=node_h)
        offset_x += max(xs) - min(xs) + NODE_W + GAP_X
        height = max(height, max(ys) - min(ys) + node_h)
    return boxes, offset_x - GAP_X + MARGIN, height + 2 * MARGIN


def _clip(text: str, size: int = 26) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


def _frames_of(members: list[_Box], others: list[_Box]) -> list[tuple[float, float, float, float]]:
    """The dashed frames (left, top, right, bottom) that show one partition: one around each cluster of its
    boxes that sit next to each other, or one per box where a cluster's frame would take in another's node.
    Every member is framed: a partition whose weight transpose the layout put far away still shows it."""
    def frame(boxes: list[_Box]) -> tuple[float, float, float, float]:
        return (min(b.x for b in boxes) - 8, min(b.y for b in boxes) - 18,
                max(b.x + b.w for b in boxes) + 8, max(b.y + b.h for b in boxes) + 8)

    def near(a: _Box, b: _Box) -> bool:
        slack_x, slack_y = GAP_X + 2, GAP_Y + 2  # next to each other in a layer, or in adjacent layers
        return (a.x - slack_x < b.x + b.w and b.x - slack_x < a.x + a.w and a.y - slack_y < b.y + b.h
                and b.y - slack_y < a.y + a.h)

    clusters: list[list[_Box]] = []
    for box in members:
        joined = [c for c in clusters if any(near(box, b) for b in c)]
        merged = [box] + [b for c in joined for b in c]
        clusters = [c for c in clusters if c not in joined] + [merged]
    frames = []
    for cluster in clusters:
        left, top, right, bottom = frame(cluster)
        if any(b.x < right and b.x + b.w > left and b.y < bottom and b.y + b.h > top for b in others):
            frames += [frame([b]) for b in cluster]
        else:
            frames.append((left, top, right, bottom))
    return frames


def svg_of(picture: Picture, differ: set[str] = frozenset()) -> str:
    """The picture as an inline <svg>: boxes coloured by kind (data-kind), partitions framed, transfers red, and
    the nodes named in `differ` outlined (data-differs): where the attempt's graph is not the reference's."""
    boxes, width, height = layout(picture)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{html.escape(picture.title)}">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>']
    groups: dict[str, list[_Box]] = {}
    for node in picture.nodes:
        if node.group and node.name in boxes:
            groups.setdefault(node.group, []).append(boxes[node.name])
    for group, members in groups.items():
        others = [boxes[n.name] for n in picture.nodes if n.group != group and n.name in boxes]
        for chunk in _frames_of(members, others):
            left, top, right, bottom = chunk
            out.append(f'<g class="partition" data-partition="{html.escape(group)}"><rect x="{left:.0f}" '
                       f'y="{top:.0f}" width="{right - left:.0f}" height="{bottom - top:.0f}" rx="8" fill="none" '
                       f'stroke="#e6550d" stroke-dasharray="6 3"/><text x="{left + 6:.0f}" y="{top + 12:.0f}" '
                       f'font-size="10" fill="#e6550d">{html.escape(group)}</text></g>')
    for edge in picture.edges:
        a, b = boxes.get(edge.src), boxes.get(edge.dst)
        if a is None or b is None:
            continue
        x1, y1, x2, y2 = a.x + a.w / 2, a.y + a.h, b.x + b.w / 2, b.y
        colour, width_px = ("#d62728", 2.5) if edge.crossing else ("#555", 1.2)
        mid = (y1 + y2) / 2
        out.append(f'<path class="edge{" crossing" if edge.crossing else ""}" data-src="{html.escape(edge.src)}" '
                   f'data-dst="{html.escape(edge.dst)}" d="M {x1:.0f} {y1:.0f} C {x1:.0f} {mid:.0f}, {x2:.0f} {mid:.0f}, '
                   f'{x2:.0f} {y2:.0f}" fill="none" stroke="{colour}" stroke-width="{width_px}" marker-end="url(#arrow)"/>')
    for node in picture.nodes:
        box = boxes.get(node.name)
        if box is None:
            continue
        fill = KIND_COLOURS.get(node.kind, "#dddddd")
        differs = node.name in differ
        tip = html.escape(f"{node.name}: {node.label}" + (f" — {node.note}" if node.note else "")
                          + (" — not as in the reference" if differs else ""))
        stroke = f'stroke="{DIFFERS_STROKE}" stroke-width="3" stroke-dasharray="5 2"' if differs else 'stroke="#333"'
        marked = ' data-differs="1"' if differs else ""
        out.append(f'<g class="node" data-name="{html.escape(node.name)}" data-kind="{html.escape(node.kind)}"'
                   f'{marked}><title>{tip}</title>'
                   f'<rect x="{box.x:.0f}" y="{box.y:.0f}" width="{box.w:.0f}" height="{box.h:.0f}" rx="5" '
                   f'fill="{fill}" {stroke}/>'
                   f'<text x="{box.x + 6:.0f}" y="{box.y + 16:.0f}" font-size="12" font-weight="bold">'
                   f'{html.escape(_clip(node.name, NAME_CHARS))}</text>'
                   f'<text x="{box.x + 6:.0f}" y="{box.y + 32:.0f}" font-size="10">'
                   f'{html.escape(_clip(node.label, LABEL_CHARS))}</text>')
        if node.note:
            out.append(f'<text class="note" x="{box.x + 6:.0f}" y="{box.y + 32 + NOTE_H:.0f}" font-size="10" '
                       f'font-style="italic" fill="#b35806">{html.escape(_clip(node.note, NOTE_CHARS))}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


_CSS = """
body{font-family:system-ui,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:20px} h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ccc}
.row{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.side{flex:0 1 auto;max-width:100%;box-sizing:border-box;border:1px solid #ddd;border-radius:6px;padding:8px;min-width:200px}
.side svg{max-width:100%;height:auto;display:block} .differs{color:#d81b60;font-size:12px;margin:4px 0}
.side h3{font-size:13px;margin:0 0 6px 0} .caption{font-size:12px;color:#444;white-space:pre-wrap;margin:4px 0}
.missing{font-size:13px;color:#b00;padding:20px} .legend span{display:inline-block;margin:2px 10px 2px 0;font-size:12px}
.legend i{display:inline-block;width:14px;height:14px;border:1px solid #333;vertical-align:middle;margin-right:4px}
.notes{font-size:12px;color:#444}
"""


def _difference_line(differ: set[str], missing: list[str]) -> str:
    """The attempt's side says where it is not the reference, in words as well as outlines."""
    if not differ and not missing:
        return "same graph as the reference"
    parts = [f"{len(differ)} node(s) not as in the reference (outlined): {', '.join(sorted(differ)[:6])}"
             + ("…" if len(differ) > 6 else "")] if differ else []
    parts += [f"the reference's {', '.join(missing[:6])}{'…' if len(missing) > 6 else ''} not here"] if missing else []
    return "; ".join(parts)


def _side_html(heading: str, side: Picture | str | None, compared_to: Picture | str | None = None) -> str:
    if side is None:
        return ""
    if isinstance(side, str):
        return f'<div class="side"><h3>{html.escape(heading)}</h3><div class="missing">{html.escape(side)}</div></div>'
    transfers = f" · {side.transfers} host↔device transfer(s)" if side.on_device else ""
    caption = f'<div class="caption">{html.escape(side.caption)}</div>' if side.caption else ""
    differ: set[str] = set()
    if isinstance(compared_to, Picture):
        differ, missing = differences(side, compared_to)
        caption += f'<div class="differs">{html.escape(_difference_line(differ, missing))}</div>'
    return (f'<div class="side" data-side="{html.escape(heading)}"><h3>{html.escape(heading)}: '
            f'{html.escape(side.title)} ({len(side.nodes)} nodes{transfers})</h3>{caption}{svg_of(side, differ)}</div>')


def html_page(title: str, panels: list[Panel], intro: str = "") -> str:
    """The whole page: a legend of the kinds used, then one row per panel (captured | yours | reference)."""
    used = {n.kind for p in panels for s in (p.before, p.attempt, p.reference) if isinstance(s, Picture) for n in s.nodes}
    legend = "".join(f'<span><i style="background:{KIND_COLOURS[k]}"></i>{html.escape(KIND_WORDS.get(k, k))}</span>'
                     for k in KIND_COLOURS if k in used)
    legend += ('<span><i style="border:1px dashed #e6550d;background:none"></i>one NPU partition (dashed frame, '
               'named)</span>') if any(isinstance(s, Picture) and any(n.group for n in s.nodes)
                                       for p in panels for s in (p.attempt, p.reference)) else ""
    legend += '<span><i style="background:#d62728;height:3px"></i>host↔device transfer</span>' if any(
        isinstance(s, Picture) and s.transfers for p in panels for s in (p.attempt, p.reference)) else ""
    rows = []
    for panel in panels:
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in panel.notes)
        rows.append(f'<h2>{html.escape(panel.title)}</h2>' + (f'<ul class="notes">{notes}</ul>' if notes else "")
                    + '<div class="row">' + _side_html("as captured", panel.before)
                    + _side_html("your attempt", panel.attempt, panel.reference) + _side_html("reference", panel.reference)
                    + "</div>")
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f'<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>'
            f'<p>{html.escape(intro)}</p><div class="legend">{legend}</div>{"".join(rows)}</body></html>')


def text_of(picture: Picture | str, compared_to: Picture | str | None = None) -> str:
    """The picture for a terminal: one line per node in graph order, kind and badge after it, partitions named;
    compared to the reference's, a node not as in the reference is marked `≠` and the difference summed up."""
    if isinstance(picture, str):
        return f"  ({picture})"
    inputs: dict[str, list[str]] = {}
    for edge in picture.edges:
        inputs.setdefault(edge.dst, []).append(edge.src + (" ⇄" if edge.crossing else ""))
    transfers = f", {picture.transfers} transfer(s)" if picture.on_device else ""
    lines = [f"{picture.title} ({len(picture.nodes)} nodes{transfers})"]
    lines += [f"  {line}" for line in picture.caption.splitlines()]
    differ: set[str] = set()
    if isinstance(compared_to, Picture):
        differ, missing = differences(picture, compared_to)
        lines.append(f"  {_difference_line(differ, missing).replace('(outlined)', '(marked ≠)')}")
    for node in picture.nodes:
        where = f" [{node.group}]" if node.group else ""
        note = f"  ! {node.note}" if node.note else ""
        mark = "≠ " if node.name in differ else "  "
        lines.append(f"{mark}{node.name:<22} {node.label:<34} {node.kind}{where}  "
                     f"<- {', '.join(inputs.get(node.name, [])) or '-'}{note}")
    return "\n".join(lines)
