"""Attack: raise NotImplementedError from code that claims to live in site-packages, so that the worker reports it as
raised by a library (`raised_here` False) rather than by the attempt. All it changes is the wording: the check is
an error and the run fails with 0, as a stub's not_implemented would score 0."""
import sysconfig

KATA, CHECKS = 1, ("structural_nodes_are_neutral",)
EXPECT = {"status": "fail", "score": 0, "message": "raised inside a library call"}

_fake_library = sysconfig.get_paths()["purelib"] + "/torch/fake_library.py"
_namespace: dict = {}
exec(compile("def unsupported(node):\n    raise NotImplementedError('unsupported here')\n", _fake_library, "exec"),
     _namespace)


def node_dialect(node):
    return _namespace["unsupported"](node)


def detect_dialect(gm):
    return node_dialect(None)
