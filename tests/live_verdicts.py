"""Every kata scored through the real checker, recorded: the verdicts `make verdicts` measures and `make test` trusts.

    make verdicts          # every kata: reference, pristine stub, first mutant and first alternative, cold and warm
    make verdicts N=5      # one kata (after changing it; N=1,4 for several); the smoke kata runs too

Scoring each kata's reference, stub, boundary mutant and alternative through the worker takes about 8 minutes of
CPU, most of `make test`'s time on 2 cores. `make test` runs them live for SMOKE_KATAS only (one end-to-end path through
the worker, the warm server and the report stays live in every run) and, for every other kata, checks that the
committed record in tests/verdicts.json was made by a run in which each of those tests passed, on exactly the files
the verdicts depend on now (tests/test_verdicts.py). A kata whose checks, lesson files, reference, stub, mutants or
alternatives changed, or any change to the checker or katas/common, makes its record stale until `make verdicts`
runs again.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "tests" / "verdicts.json"
RECORD_FORMAT = 1
# The kata whose live tests run in every `make test`: the cheapest end-to-end path (about 25 s of CPU in all).
SMOKE_KATAS = ("02_graph_breaks",)
# Set by `make verdicts`: "all", or katas' numbers ("5", "1,4"). Those katas' live tests run, and the passing ones are recorded.
RECORDING = "FX_KATAS_RECORD_VERDICTS"
# Shared by every kata's fingerprint: the checker (its worker, warm server and report included), the shared kata code
# and the tests that do the scoring. Of katas/katas.toml, each kata's fingerprint takes its own entry only.
SHARED_INPUTS = ("checker", "katas/common", "tests/test_katas.py", "tests/conftest.py", "tests/live_verdicts.py")
MANIFEST = "katas/katas.toml"
# A kata's own inputs; its notes (*.md) change no verdict.
KATA_INPUTS = ("katas/{slug}", "solutions/{slug}", "tests/mutants/{slug}", "tests/alternatives/{slug}")


def recording() -> bool:
    return bool(os.environ.get(RECORDING))


def runs_live(slug: str) -> bool:
    """Whether this run scores `slug` through the checker (else its recorded verdicts stand in)."""
    wanted = os.environ.get(RECORDING, "")
    numbers = {int(n) for n in wanted.split(",") if n.strip().isdigit()}
    return slug in SMOKE_KATAS or wanted == "all" or int(slug.split("_")[0]) in numbers


def _files(relative: str) -> list[Path]:
    path = ROOT / relative
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix != ".md" and "__pycache__" not in p.parts)


def fingerprint(slug: str) -> str:
    """A hash of every file `slug`'s live verdicts depend on, with torch's and Python's versions."""
    import torch

    digest = hashlib.sha256(f"{torch.__version__}|{sys.version_info[:2]}".encode())
    digest.update(json.dumps(_manifest_entry(slug), sort_keys=True).encode())
    for relative in (*SHARED_INPUTS, *(part.format(slug=slug) for part in KATA_INPUTS)):
        for path in _files(relative):
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:20]


def _manifest_entry(slug: str) -> dict:
    """The kata's own table in katas/katas.toml (its stages, time limit, ...): another kata's entry changes nothing."""
    import tomllib

    manifest = tomllib.loads((ROOT / MANIFEST).read_text(encoding="utf-8"))
    return next((entry for entry in manifest.get("kata", []) if entry.get("slug") == slug), {})


def load_record() -> dict:
    if not RECORD.exists():
        return {"format": RECORD_FORMAT, "katas": {}}
    return json.loads(RECORD.read_text(encoding="utf-8"))


def record_passing_katas(expected: dict[str, set[str]], passed: set[str], seconds: dict[str, float]) -> list[str]:
    """Write a new entry for each kata all of whose `expected` test ids passed in this run; returns those katas.
    A kata with one test failed, skipped or not run keeps its old entry (which the currency test then reports)."""
    record = load_record()
    done = []
    for slug, ids in sorted(expected.items()):
        if ids and ids <= passed:
            record["katas"][slug] = {"fingerprint": fingerprint(slug), "passed": sorted(ids),
                                     "cpu_seconds": round(sum(seconds.get(i, 0.0) for i in ids), 1)}
            done.append(slug)
    record["format"] = RECORD_FORMAT
    RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return done
