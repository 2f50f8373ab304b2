"""Attack: replace the reference's functions with the attempt's own (wrong) ones, in memory and on disk, so
that checks comparing with the reference agree with anything."""
import sys
from pathlib import Path

KATA, CHECKS = 1, ("random_mlps_in_every_capture",)
EXPECT = {"status": "fail", "score": 0, "rewrites": "solutions/01_dialects/dialects.py"}


def node_dialect(node):
    return "torch"


def detect_dialect(gm):
    return "torch"


for name, module in list(sys.modules.items()):
    if name.startswith("reference"):
        module.node_dialect, module.detect_dialect = node_dialect, detect_dialect
reference = Path(__file__).resolve().parents[2] / "solutions" / "01_dialects" / "dialects.py"
try:  # the run's checks loaded the reference before this file was imported: this changes nothing for them
    reference.write_text("def node_dialect(node):\n    return 'torch'\n\ndef detect_dialect(gm):\n    return 'torch'\n")
except OSError:
    pass
