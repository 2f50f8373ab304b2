"""`make gradescope-check`: the Gradescope autograder end to end, as Gradescope runs it, with kata 2.

Builds the bundle, unzips it into a temporary root laid out like /autograder, runs `setup.sh` (a new virtual
environment with torch==2.13.0 and the checker: a minute or more, which is why `make test` does not), then
`run_autograder` for six submissions a class really hands in, validates each results.json against the schema,
and writes what it saw to tests/gradescope/e2e.json. tests/test_gradescope.py holds that record to the
autograder's current files, so a change to them asks for this to run again.

FX_KATAS_TORCH_INDEX: the index of torch's CPU wheels that setup.sh uses (default: PyTorch's; empty here, where
pip is already set up with them and PyTorch's own index is out of reach).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from checker.core.manifest import get_kata  # noqa: E402
from checker.mentor.gradescope import AutograderConfig, build_bundle  # noqa: E402

RECORD = REPO_ROOT / "tests" / "gradescope" / "e2e.json"
KATA = get_kata(2)
LOOP = "def find_graph_breaks(fn, *args, **kwargs):\n    while True:\n        pass\n"


def submissions() -> dict[str, dict[str, str]]:
    """Name -> {path in the submission: text}."""
    # a known mistake that stands alone (the hand-written mutants load the reference, which the grading sandbox
    # hides): the reference, with its breaks listed in line order instead of the order Dynamo reports them
    mutant = KATA.solution_path.read_text() + (
        "\n\n_found_in_order = find_graph_breaks\n\n\ndef find_graph_breaks(fn, *args, **kwargs):\n"
        "    return sorted(_found_in_order(fn, *args, **kwargs), key=lambda b: (b.filename, b.lineno))\n")
    return {
        "reference": {f"fx-katas/katas/{KATA.slug}/{KATA.module}": KATA.solution_path.read_text()},
        "stub": {KATA.module: KATA.stub_path.read_text()},
        "mutant": {f"{KATA.slug}/{KATA.module}": mutant},
        "syntax_error": {KATA.module: "def find_graph_breaks(:\n"},
        "infinite_loop": {KATA.module: KATA.stub_path.read_text() + "\n\n" + LOOP},
        "missing": {"README.txt": "nothing here"},
    }


def verdict(data: dict, top: int) -> str:
    return "full marks" if data["score"] == top else "0" if data["score"] == 0 else "partial"


def main() -> int:
    import jsonschema

    from checker.mentor.gradescope import SCHEMA_PATH
    from tests.test_gradescope import _inputs_digest

    schema = json.loads(SCHEMA_PATH.read_text())
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fx-katas-gradescope-") as tmp:
        root = Path(tmp) / "autograder"
        # the working tree, whose files the record's digest is of (a bundle for learners is built from HEAD)
        bundle = build_bundle(Path(tmp) / "autograder.zip",
                              AutograderConfig(katas=[KATA.number], time_limits={str(KATA.number): 120.0}),
                              allow_dirty=True).path
        with zipfile.ZipFile(bundle) as opened:
            opened.extractall(root / "source")
        for name in ("setup.sh", "run_autograder"):
            (root / "source" / name).chmod(0o755)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env.update(FX_KATAS_AUTOGRADER_ROOT=str(root), FX_KATAS_TORCH_INDEX=os.environ.get("FX_KATAS_TORCH_INDEX", ""),
                   FX_KATAS_SYSTEM_SETUP=os.environ.get("FX_KATAS_SYSTEM_SETUP", "0"))  # no apt-get, no useradd here
        print("running setup.sh (a new virtual environment with torch: a minute or more)", flush=True)
        setup = subprocess.run([str(root / "source" / "setup.sh")], env=env, capture_output=True, text=True)
        if setup.returncode:
            print(setup.stdout[-3000:], setup.stderr[-3000:])
            return 1
        torch_version = subprocess.run([str(root / "venv" / "bin" / "python"), "-c", "import torch; print(torch.__version__)"],
                                       capture_output=True, text=True).stdout.strip()
        statuses, seconds = {}, {}
        for name, files in submissions().items():
            shutil.rmtree(root / "submission", ignore_errors=True)
            shutil.rmtree(root / "results", ignore_errors=True)
            for path, text in files.items():
                (root / "submission" / path).parent.mkdir(parents=True, exist_ok=True)
                (root / "submission" / path).write_text(text)
            began = time.monotonic()
            subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True, timeout=300)
            data = json.loads((root / "results" / "results.json").read_text())
            jsonschema.validate(data, schema)
            top = sum(t["max_score"] for t in data["tests"]) or 1
            statuses[name], seconds[name] = verdict(data, top), round(time.monotonic() - began, 1)
            print(f"{name:<14} {statuses[name]:<11} {data['score']}/{top}  {seconds[name]} s  "
                  f"{data['output'].splitlines()[0][:90]}", flush=True)
    record = {"inputs": _inputs_digest(), "setup": "ok", "torch": torch_version, "kata": KATA.number,
              "statuses": statuses, "seconds": seconds, "total_seconds": round(time.monotonic() - started, 1)}
    RECORD.parent.mkdir(parents=True, exist_ok=True)
    RECORD.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {RECORD.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
