"""Which index `make setup` takes torch from: PyTorch's CPU wheels where the configured index would bring the
multi-GB CUDA build. Run by the Makefile with the new virtual environment's Python, before anything is installed
(standard library only); prints the pip arguments to install torch with, or nothing when the configured index is
right (a CPU build resolves, torch is installed already, or the machine is not Linux x86-64, where PyPI's wheels
are CPU-only anyway).

`python setup/torch_wheel.py` prints its decision; the Makefile installs torch with those arguments first, so
`pip install -e .` then finds torch satisfied. A resolution that fails (no network) decides nothing: pip's own
install then says what went wrong.
"""
from __future__ import annotations

import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

TORCH = "torch==2.13.0"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def resolved_torch_version(report: dict) -> str | None:
    """The version of torch in a `pip install --dry-run --report` report, or None."""
    for item in report.get("install", []):
        metadata = item.get("metadata", {})
        if str(metadata.get("name", "")).lower() == "torch":
            return str(metadata.get("version"))
    return None


def needs_cpu_index(system: str, machine: str, installed: str | None, resolved: str | None) -> bool:
    """True when torch should come from the CPU index: on Linux x86-64 only, when no torch is installed yet (an
    installed build, CPU or CUDA, is left alone: it is the learner's), and the configured index resolves torch to
    a build without the `+cpu` local label (PyPI's Linux wheel is the CUDA one, with its nvidia-* packages)."""
    if system != "Linux" or machine not in ("x86_64", "AMD64") or installed or resolved is None:
        return False
    return not resolved.endswith("+cpu")


def _installed_version() -> str | None:
    """The installed torch's version, read from its metadata (importing torch would take seconds)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return None


def _resolve() -> str | None:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps",
                               "--ignore-installed", "--disable-pip-version-check", "--report", str(report), TORCH],
                              capture_output=True, text=True)
        if done.returncode != 0 or not report.is_file():
            return None
        return resolved_torch_version(json.loads(report.read_text(encoding="utf-8")))


def main() -> int:
    installed = _installed_version()
    resolved = None if installed else _resolve()
    if needs_cpu_index(platform.system(), platform.machine(), installed, resolved):
        print(f"--index-url {CPU_INDEX}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
