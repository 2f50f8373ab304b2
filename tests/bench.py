"""`make bench`: how fast is the feedback loop? Measures on this machine, in one run, and prints a table.

- floor: a fresh `python -c` that imports torch and does one Dynamo compile of a small MLP — the least any
  kata check can cost, since every check runs in a fresh process that imports torch and captures graphs;
- every kata: wall time of `python -m checker kata N --solution`, and its ratio to the floor (target <= 3x);
- Hypothesis throughput: examples per second of each fuzz check (from the checker's verbose JSON);
- `python -m checker all` (target < 30 s) and `make test` (target < 300 s; skip with --no-make-test).

Not a test: timings depend on the machine. Run it after a change that could slow the loop down.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from checker.manifest import load_katas  # noqa: E402

FLOOR_CODE = """
import torch
mlp = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
torch.compile(mlp, backend="eager", fullgraph=True)(torch.randn(2, 8))
"""
KATA_RATIO_TARGET = 3.0
ALL_TARGET_S = 30.0
MAKE_TEST_TARGET_S = 300.0


def timed(cmd: list[str], **kwargs) -> tuple[float, subprocess.CompletedProcess]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "NO_COLOR": "1", "PYTHONWARNINGS": "ignore"}
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, env=env, **kwargs)
    return time.perf_counter() - started, proc


def measure_floor(repeats: int = 3) -> float:
    return min(timed([sys.executable, "-c", FLOOR_CODE])[0] for _ in range(repeats))


def measure_kata(number: int) -> tuple[float, str, list[tuple[str, int, float]]]:
    """(wall seconds, status, [(fuzz check id, examples, seconds)]) of the reference's run."""
    seconds, proc = timed([sys.executable, "-m", "checker", "kata", str(number), "--solution", "--json", "--verbose"])
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return seconds, "no JSON: " + (proc.stderr.strip().splitlines() or ["?"])[-1], []
    fuzz = [(c["id"], run["examples"], run["seconds"]) for c in data["checks"] for run in c.get("fuzz", [])]
    return seconds, data["status"], fuzz


def measure_all_solved() -> tuple[float, str]:
    """`python -m checker all --fresh` in a throwaway copy of the repo whose stubs hold the reference solutions:
    the slowest `make progress` a learner can meet (pristine stubs are recognised without running anything)."""
    with tempfile.TemporaryDirectory(prefix="fx-katas-bench-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(REPO_ROOT, copy, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", ".kata-*"))
        for kata in load_katas():
            shutil.copyfile(kata.solution_path, copy / kata.stub_path.relative_to(REPO_ROOT))
        env = {**os.environ, "PYTHONPATH": str(copy), "FX_KATAS_PROGRESS": str(Path(tmp) / "progress.json"),
               "FX_KATAS_BACKUPS": str(Path(tmp) / "backups"), "NO_COLOR": "1"}
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "checker", "all", "--fresh"], cwd=copy, env=env,
                              capture_output=True, text=True)
        seconds = time.perf_counter() - started
    summary = next((line.strip() for line in proc.stdout.splitlines() if "katas pass" in line), proc.stderr.strip()[-200:])
    return seconds, summary


def verdict(ok: bool) -> str:
    return "ok" if ok else "OVER"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-make-test", action="store_true", help="skip timing `make test` (it takes minutes)")
    args = parser.parse_args()

    floor = measure_floor()
    print(f"floor (python -c: import torch + one Dynamo compile of a small MLP, best of 3): {floor:.2f} s\n")
    print(f"{'kata':<28} {'--solution':>10} {'x floor':>8}  {'target':>7}  status")
    fuzz_rows = []
    for kata in load_katas():
        seconds, status, fuzz = measure_kata(kata.number)
        ratio = seconds / floor
        print(f"{kata.number} {kata.slug:<26} {seconds:>9.2f}s {ratio:>7.1f}x  {verdict(ratio <= KATA_RATIO_TARGET):>7}  {status}")
        fuzz_rows += [(kata.slug, *row) for row in fuzz]

    print(f"\n{'fuzz check':<58} {'examples':>8} {'seconds':>8} {'examples/s':>10}")
    for slug, check_id, examples, seconds in fuzz_rows:
        rate = examples / seconds if seconds else float("inf")
        print(f"{slug + '/' + check_id:<58} {examples:>8} {seconds:>8.2f} {rate:>10.1f}")

    seconds, status = measure_all_solved()
    print(f"\npython -m checker all --fresh, every kata solved: {seconds:.1f} s "
          f"(target < {ALL_TARGET_S:.0f} s: {verdict(seconds < ALL_TARGET_S)}); {status}")
    if not args.no_make_test:
        seconds, proc = timed(["make", "test"])
        status = "passed" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})"
        print(f"make test: {seconds:.1f} s (target < {MAKE_TEST_TARGET_S:.0f} s: "
              f"{verdict(seconds < MAKE_TEST_TARGET_S)}), {status}, on {os.cpu_count()} cores")
        if proc.returncode:
            print("\n".join((proc.stdout + proc.stderr).strip().splitlines()[-40:]))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
