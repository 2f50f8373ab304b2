"""The real-model zoo (katas/common/real_models.py) and its committed table (tests/real_models.json, docs/real-models.md)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import real_model_table  # noqa: E402

BUILD_EVERY_MODEL = """
import socket, torch
from katas.common.real_models import REAL_MODELS
for name, entry in REAL_MODELS.items():
    model = entry.build()
    with torch.no_grad():
        first, second = model(*entry.inputs(0)), model(*entry.inputs(1))
    assert first.shape[0] == entry.shapes[0][0] and second.shape[0] == entry.shapes[1][0], name
    torch.testing.assert_close(model(*entry.inputs(0)), entry.build()(*entry.inputs(0)))  # seeded weights
try:
    socket.create_connection(("pypi.org", 443), timeout=2)
    print("network reachable")
except OSError:
    print("no network")
"""


def test_committed_table_is_current():
    table = json.loads(real_model_table.RESULTS.read_text())
    assert table["_inputs"]["fingerprint"] == real_model_table.fingerprint(), (
        "tests/real_models.json was measured with other models, references or device code than these: "
        "run `make real-models` and commit the result")
    assert set(table) - {"_inputs"} == set(real_model_table.REAL_MODELS)


def test_readme_table_is_the_committed_one():
    table = json.loads(real_model_table.RESULTS.read_text())
    readme = real_model_table.README.read_text()
    assert real_model_table.render(table) in readme, "the table in docs/real-models.md differs: run `make real-models`"


def test_every_model_builds_and_runs_with_networking_off():
    """No model hub access anywhere: every model builds and runs at both shapes in a network namespace with no
    network at all (bubblewrap, which `make test` installs)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("bubblewrap is not installed (make test installs it as root)")
    command = [bwrap, "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent", sys.executable, "-c",
               BUILD_EVERY_MODEL]
    probe = subprocess.run([bwrap, "--dev-bind", "/", "/", "--unshare-net", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"bubblewrap cannot make a network namespace here: {probe.stderr.decode().strip()}")
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "no network" in done.stdout


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"\d+\.\d", text)]


def test_kata9_lesson_quotes_mobilenets_measured_sensitivity():
    """Kata 9's lesson walks through MobileNetV2's sensitivity step with numbers; `make real-models` measures them
    (tests/real_models.json), and the lesson must quote what was measured."""
    figures = json.loads(real_model_table.RESULTS.read_text())["mobilenet"]["kata 9"]
    lesson = " ".join((ROOT / "katas" / "09_int8_quantization" / "README.md").read_text().split())
    alone = re.search(r"On MobileNetV2 the adds measure ([\d., and]+) dB alone", lesson)
    assert alone and _numbers(alone.group(1)) == figures["each layer alone dB"], (
        f"the lesson's per-add figures differ from the measured {figures['each layer alone dB']}")
    tried = re.search(r"Keeping the worst float gives (.*?) dB: (\w+) of the ten adds stay float \(([\d.]+) dB on the "
                      r"first calibration batch, against ([\d.]+) before the step\)", lesson)
    assert tried, "the lesson's sentence on the starts tried has changed shape: update this test with it"
    assert _numbers(tried.group(1)) == figures["starts tried dB"][1:], f"measured starts: {figures['starts tried dB']}"
    assert [float(tried.group(3)), float(tried.group(4))] == [figures["sqnr dB"],
                                                             figures["every layer int8, first batch dB"]]
    assert f"quantized whole it is {figures['every layer int8 dB']} dB from float over its four calibration " \
           f"batches ({figures['every layer int8, first batch dB']} dB on the first" in lesson
    words = ["none", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    assert tried.group(2) == words[figures["float layers"]], f"{figures['float layers']} layers were kept float"
