"""`python -m checker.trusted.check_list CHECKS.py ...`: the checks and points of kata check modules, without
running them.

Used to fill in a kata's maximum score when there is no attempt to run (missing file, untouched stub).
Only the kata's own hidden checks are imported here, never attempt code.
"""
from __future__ import annotations

import io
import json
import sys
import warnings
from contextlib import redirect_stdout
from pathlib import Path

MARKER = "FX-KATAS-PROBE "


def main(argv: list[str]) -> int:
    from checker.core.modules import load_module

    warnings.simplefilter("ignore")
    found = {}
    for i, path in enumerate(argv):
        try:
            with redirect_stdout(io.StringIO()):
                module = load_module(Path(path), f"kata_hidden_checks_{i}")
            found[path] = [(s.id, s.stage, s.name, s.weight) for s in module.CHECKS.specs]
        except Exception as exc:  # noqa: BLE001 - report, the caller decides
            found[path] = f"{type(exc).__name__}: {exc}"
    print(MARKER + json.dumps(found))
    return 0


if __name__ == "__main__":
    from checker.core.processes import exit_without_teardown

    exit_without_teardown(main(sys.argv[1:]))
