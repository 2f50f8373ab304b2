"""`make graph N=k` (checker/kit/pictures.py and each kata's graph_pictures hook), looked at as a person would: the
page's SVG holds one box per node of the graph with its name and the colour of its kind, partitions move nodes
without losing one, a refused pair shows as refused, and a real browser draws the page in those colours.
"""
from __future__ import annotations

import collections
import html
import html.parser
import os
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from checker.core.manifest import REPO_ROOT, get_kata, load_katas
from checker.kit.pictures import (KIND_COLOURS, LABEL_CHARS, NAME_CHARS, NOTE_CHARS, Picture, _frames_of, html_page,
                                   layout, text_of)
from checker.learner.diffing import run_pictures
from conftest import MUTANTS_DIR
from katas.common import capture
from katas.common.zoo import ZOO


class _Svg(html.parser.HTMLParser):
    """Every drawn node of a page: (side heading, name, kind, fill colour, texts)."""

    def __init__(self) -> None:
        super().__init__()
        self.nodes: list[dict] = []
        self.crossing = 0
        self._side, self._node, self._text = "", None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "div" and "data-side" in attrs:
            self._side = attrs["data-side"]
        elif tag == "g" and attrs.get("class") == "node":
            self._node = {"side": self._side, "name": attrs["data-name"], "kind": attrs["data-kind"], "texts": []}
            self.nodes.append(self._node)
        elif tag == "rect" and self._node is not None and "fill" in attrs:
            self._node["fill"] = attrs["fill"]
        elif tag == "text" and self._node is not None:
            self._text = []
        elif tag == "path" and "crossing" in attrs.get("class", ""):
            self.crossing += 1

    def handle_data(self, data):
        if self._text is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "text" and self._text is not None and self._node is not None:
            self._node["texts"].append("".join(self._text))
            self._text = None
        elif tag == "g":
            self._node = None


def drawn(page: str) -> _Svg:
    parser = _Svg()
    parser.feed(page)
    return parser


_LAUNCHER = None


@pytest.fixture(autouse=True)
def samples_forked_warm(warm_launcher):
    """The sample processes of these tests are forked by the session's warm server, as `make graph` does
    while a server runs (tests/test_warm.py compares a warm sample with a cold one)."""
    global _LAUNCHER
    _LAUNCHER = warm_launcher
    yield
    _LAUNCHER = None


def pictures(number: int, attempt: Path | None = None, **options) -> list:
    kata = get_kata(number)
    panels = run_pictures(kata, attempt or kata.solution_path, launcher=_LAUNCHER, **options)
    assert not isinstance(panels, str), panels
    return panels


def kinds(picture: Picture) -> collections.Counter:
    return collections.Counter(node.kind for node in picture.nodes)


def assert_readable(panel) -> None:
    """What a learner sees of a panel, from the layout's own coordinates: no box over another, every box inside
    the drawing, every partition's nodes inside a frame of that partition and no other's node in it, every
    clipped text whole in the node's tooltip, and a page whose pictures scale down and wrap to fit the window."""
    for side in (panel.before, panel.attempt, panel.reference):
        if not isinstance(side, Picture):
            continue
        boxes, width, height = layout(side)
        placed = list(boxes.items())
        for i, (a_name, a) in enumerate(placed):
            assert 0 <= a.x and a.x + a.w <= width and 0 <= a.y and a.y + a.h <= height, f"{a_name} is cut off"
            assert a.h == side.node_height(), "a badge is a line inside its box"
            for b_name, b in placed[i + 1:]:
                overlap = a.x < b.x + b.w and b.x < a.x + a.w and a.y < b.y + b.h and b.y < a.y + a.h
                assert not overlap, f"{a_name} and {b_name} overlap in {side.title}"
        for group in {n.group for n in side.nodes if n.group}:
            members = [boxes[n.name] for n in side.nodes if n.group == group]
            others = [boxes[n.name] for n in side.nodes if n.group != group]
            frames = _frames_of(members, others)
            for box in members:
                assert any(l <= box.x and box.x + box.w <= r and t <= box.y and box.y + box.h <= b
                           for l, t, r, b in frames), f"a node of {group} is outside its frames"
            for l, t, r, b in frames:
                assert not any(o.x < r and o.x + o.w > l and o.y < b and o.y + o.h > t for o in others), \
                    f"a frame of {group} takes in another partition's or the host's node"
        page = html_page("readable", [panel])
        for node in side.nodes:
            for text, chars in ((node.name, NAME_CHARS), (node.label, LABEL_CHARS), (node.note, NOTE_CHARS)):
                if len(text) > chars:
                    assert html.escape(text) in page or text in page, f"{text!r} is clipped and not in a tooltip"
    page = html_page("readable", [panel])
    assert "flex-wrap:wrap" in page and ".side svg{max-width:100%;height:auto" in page, "panels fit the window"


def test_kata_1_draws_every_node_of_each_capture_in_the_colour_of_its_dialect():
    methods = ("export_core", "symbolic_trace")
    panels = [pictures(1, capture=method)[0] for method in methods]
    for panel, method in zip(panels, methods):
        gm = capture(ZOO["mlp"].build(), ZOO["mlp"].inputs(), method).gm
        names = [node.name for node in gm.graph.nodes]
        assert [n.name for n in panel.reference.nodes] == names == [n.name for n in panel.attempt.nodes]
        page = drawn(html_page("kata 1", [panel]))
        for side, picture in (("your attempt", panel.attempt), ("reference", panel.reference)):
            boxes = {n["name"]: n for n in page.nodes if n["side"] == side}
            assert sorted(boxes) == sorted(names), "one box per FX node"
            for node in picture.nodes:
                assert boxes[node.name]["fill"] == KIND_COLOURS[node.kind]
                assert boxes[node.name]["texts"][0] == node.name
    export_core, module = panels[0].reference, panels[1].reference
    assert {n.kind for n in export_core.nodes if n.label.startswith("function aten.")} == {"core_aten"}
    assert {n.kind for n in module.nodes if n.label.startswith("call_module")} == {"module"}
    assert {n.kind for n in module.nodes if n.label == "placeholder"} == {"io"}
    for panel in panels:
        assert_readable(panel)


def test_kata_3_marks_the_fused_pair_and_the_pair_the_guard_refused_and_a_mutant_shows_neither():
    reference = pictures(3, capture="symbolic_trace")[0]
    assert kinds(reference.before)["safe"] == 2 and kinds(reference.before)["refused"] == 2
    assert kinds(reference.reference)["fused"] == 1 and kinds(reference.reference)["refused"] == 2
    refused = [n for n in reference.reference.nodes if n.kind == "refused" and n.note]
    assert refused and "has 2 readers" in refused[0].note
    mutant = pictures(3, MUTANTS_DIR / "03_fusion_guard" / "no_guard_duplicates_linear.py", capture="symbolic_trace")[0]
    assert kinds(mutant.attempt)["fused"] == 2 and kinds(mutant.attempt)["refused"] == 0, "the unsafe pair was fused"
    assert kinds(mutant.reference) == kinds(reference.reference)
    page = drawn(html_page("kata 3", [mutant]))
    assert sum(n["kind"] == "refused" for n in page.nodes if n["side"] == "reference") == 2
    assert any("guard: fc1 has 2 readers" in text for n in page.nodes for text in n["texts"])
    fused = [n for n in reference.reference.nodes if n.kind == "fused"]
    assert fused[0].note == "fc2 + act2, approximate=tanh", "a fused node names the pair it replaced"
    assert_readable(mutant)


def test_the_attempts_side_marks_where_it_is_not_the_reference():
    """Outlined in the page and marked `≠` in the text: a learner sees at once which nodes to look at."""
    mutant = pictures(3, MUTANTS_DIR / "03_fusion_guard" / "no_guard_duplicates_linear.py", capture="symbolic_trace")[0]
    page = html_page("kata 3", [mutant])
    attempt_side = page.split('data-side="your attempt"')[1].split('data-side="reference"')[0]
    reference_side = page.split('data-side="reference"')[1]
    assert 'data-differs="1"' in attempt_side and 'data-differs="1"' not in reference_side
    assert "not as in the reference" in attempt_side
    text = text_of(mutant.attempt, mutant.reference)
    assert "\n≠ " in text and "not as in the reference" in text
    solved = pictures(3, capture="symbolic_trace")[0]
    assert 'data-differs="1"' not in html_page("kata 3", [solved])
    assert "same graph as the reference" in text_of(solved.attempt, solved.reference)


def test_kata_3_draws_the_view_sandwich_of_a_decomposed_graph_and_its_guard():
    """A 3-D input: the decomposed capture flattens x for the product and reshapes after it, and a guard that
    forgets the view's other readers fuses a pair the reference leaves alone."""
    panel = pictures(3, capture="export_core")[0]
    assert "(2, 3, 4)" in panel.title and "as a CORE_ATEN graph" in panel.title
    assert sum(n.label == "function aten.view.default" for n in panel.before.nodes) == 4
    assert kinds(panel.before)["refused"] == 2 and kinds(panel.before)["safe"] == 2
    assert any(n.note == "guard: addmm's view view_1 has 2 readers" for n in panel.before.nodes)
    fused = [n for n in panel.reference.nodes if n.kind == "fused"]
    assert len(fused) == 1 and fused[0].note.startswith("mm + gelu_1"), fused
    assert_readable(panel)
    other = pictures(3, capture="make_fx")[0]
    assert "as an ATEN graph (make_fx)" in other.title


def _op_targets(picture: Picture) -> collections.Counter:
    return collections.Counter(n.label for n in picture.nodes if n.label.startswith("function aten."))


def test_kata_4_partitions_move_nodes_onto_the_npu_without_losing_one_and_count_the_transfers():
    panel = pictures(4, capture="make_fx")[0]
    gm = capture(ZOO["renamed"].build(), ZOO["renamed"].inputs(), "make_fx").gm
    from checker.kit.pictures import target_text

    ops = collections.Counter(target_text(n) for n in gm.graph.nodes if n.op == "call_function")
    assert _op_targets(panel.reference) == +collections.Counter({k: v for k, v in ops.items() if "aten." in k})
    picture = panel.reference
    on_npu = {n.name for n in picture.nodes if n.kind == "npu"}
    assert on_npu and all(n.group for n in picture.nodes if n.kind == "npu")
    assert {n.label for n in picture.nodes if n.kind == "cpu"} == {"function aten._softmax.default"}
    crossing = [e for e in picture.edges if (e.src in on_npu) != (e.dst in on_npu)]
    assert picture.transfers == len(crossing) > 0, "every edge into or out of a partition, and only those"
    assert drawn(html_page("kata 4", [panel])).crossing == 2 * picture.transfers  # both sides drawn
    assert_readable(panel)
    mutant = pictures(4, MUTANTS_DIR / "04_op_support" / "modules_matched_by_attribute_name.py",
                      capture="symbolic_trace")[0]
    assert kinds(mutant.attempt)["npu"] != kinds(mutant.reference)["npu"], "the attempt's support draws its own partitions"


@pytest.mark.parametrize("number", [2, 5])
def test_katas_2_and_5_draw_the_reference_and_an_unfinished_stub_says_why(number):
    kata = get_kata(number)
    solved = pictures(number)
    assert all(isinstance(p.reference, Picture) and p.reference.nodes for p in solved)
    assert all(isinstance(p.attempt, Picture) for p in solved)
    if number == 5:
        reference = solved[0].reference
        assert kinds(reference)["npu"] > 0 and reference.transfers > 0
        assert {n.note for n in reference.nodes if n.label == "placeholder"} == {
            "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias", "x"}, "inputs are named"
        assert "first call: 3 program(s) compiled" in reference.caption, reference.caption
        assert "batch 5 again: 0 program(s) compiled" in reference.caption, "a shape seen before compiles nothing"
        assert len({n.group for n in reference.nodes if n.group}) == 3
    else:
        assert all(len({n.group for n in p.reference.nodes}) == 1 for p in solved), "each fix is one graph"
    for panel in solved:
        assert_readable(panel)
    if number == 5:  # kata 2's stub says the same through the same picture_or_failure
        stub = pictures(number, kata.stub_path)
        assert all(isinstance(p.attempt, str) and "not implemented" in p.attempt for p in stub), [p.attempt for p in stub]


def test_kata_6_draws_each_fixs_last_graph_with_its_symbolic_inputs_under_the_suspects_graph():
    solved = pictures(6)
    assert [p.title for p in solved] == ["FixedDecayingHead", "FixedRunningMean", "fixed_rowwise_normalize"]
    assert all(isinstance(p.reference, Picture) and isinstance(p.before, Picture) for p in solved)
    rowwise = solved[2]
    assert kinds(rowwise.reference)["symbolic"] >= 1, "the batch dimension of the last graph is symbolic"
    assert len(rowwise.before.nodes) > len(rowwise.reference.nodes), "the suspect's loop is unrolled in its graph"


def test_kata_7_draws_where_each_rewrite_put_the_fused_node_beside_the_grad_mode_switches():
    mutant = REPO_ROOT / "tests" / "mutants" / "07_custom_ops" / "rewriter_without_grad_mode_filter.py"
    panels = {p.title: p for p in pictures(7, mutant, model="grad frozen_pair")}
    frozen = panels["grad frozen_pair"]
    assert kinds(frozen.before)["grad_mode"] == 2 and kinds(frozen.before)["fused"] == 0
    assert kinds(frozen.attempt)["fused"] == 1, "without the filter, the pair is fused past the block's end"
    assert kinds(frozen.reference)["fused"] == 0 and kinds(frozen.reference)["torch"] == 4


def test_kata_9_draws_the_int8_ops_on_the_npu_and_a_mutant_leaves_the_add_on_the_cpu():
    mutant = REPO_ROOT / "tests" / "mutants" / "09_int8_quantization" / "lowers_only_linears.py"
    residual = pictures(9, mutant, model="residual")[0]
    assert kinds(residual.before)["npu"] == 0 and kinds(residual.before)["qdq"] >= 8, "quantized, not yet lowered"
    assert kinds(residual.reference)["npu"] == 4, "three int8 linears and the int8 add"
    assert kinds(residual.attempt)["npu"] == 3 and kinds(residual.attempt)["cpu"] == 1, "the add stays float"
    assert_readable(residual)


def test_make_graph_writes_the_page_and_prints_the_text_picture(tmp_path):
    out = tmp_path / "kata1.html"
    proc = subprocess.run([sys.executable, "-m", "checker", "graph", "1", "--attempt",
                           str(get_kata(1).solution_path), "--capture", "dynamo", "--text", "--out", str(out)],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.is_file() and "<svg" in out.read_text() and str(out.name) in proc.stdout
    assert "torch" in proc.stdout and "placeholder" in proc.stdout, proc.stdout
    wrong = subprocess.run([sys.executable, "-m", "checker", "graph", "1", "--model", "no_such_model"],
                           capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert wrong.returncode == 2 and "no_such_model" in wrong.stderr and "Traceback" not in wrong.stderr


# --- in a real browser -------------------------------------------------------------------------------------

def _browser() -> str | None:
    return next((found for name in ("chromium", "chromium-browser", "google-chrome") if (found := shutil.which(name))), None)


def png_pixels(data: bytes) -> tuple[int, int, list[tuple[int, ...]]]:
    """Width, height and RGB pixels of an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    channels = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(b"".join(chunks)), width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(line)
        previous = line
    pixels = [tuple(row[x * channels:x * channels + 3]) for row in rows for x in range(width)]
    return width, height, pixels


def test_a_browser_draws_the_page_in_the_colours_of_the_nodes(tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium here: `make test` installs Debian's `chromium` where apt-get can (as root); "
                    "install it to run this test")
    panel = pictures(4, capture="make_fx")
    page = tmp_path / "kata4.html"
    page.write_text(html_page("kata 4", panel), encoding="utf-8")
    shot = tmp_path / "shot.png"
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=1200,900", f"--screenshot={shot}", page.as_uri()],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "HOME": str(tmp_path)})
    assert shot.is_file(), proc.stderr[-800:]
    width, height, pixels = png_pixels(shot.read_bytes())
    assert (width, height) == (1200, 900)
    colours = collections.Counter(pixels)
    assert colours[(255, 255, 255)] < 0.97 * len(pixels), "the page is blank"
    npu = tuple(int(KIND_COLOURS["npu"][i:i + 2], 16) for i in (1, 3, 5))
    cpu = tuple(int(KIND_COLOURS["cpu"][i:i + 2], 16) for i in (1, 3, 5))
    assert colours[npu] > 2000 and colours[cpu] > 500, "the NPU and CPU boxes are not drawn in their colours"
