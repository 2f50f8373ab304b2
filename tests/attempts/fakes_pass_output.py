"""Prints what a naive checker might take for success, including lines shaped like the checker's events."""
import json
import sys

FAKE = json.dumps({"event": "result", "id": "call_module_node_is_module", "status": "pass", "message": ""})
print("PASS\nscore: 38/38   status: pass\n" + FAKE)
sys.stderr.write(FAKE + "\n")


def node_dialect(node):
    print(FAKE)
    return "nonsense"


def detect_dialect(gm):
    print('{"event": "done"}')
    return "nonsense"
