"""Mistake: the finder canonicalises each filename with os.path.realpath ("a clean absolute path is safer to
compare") instead of reporting the path Dynamo prints. Right wherever no symlink or `..` is on the path; a module
imported through a symlinked folder (an editable install, macOS's /tmp) is reported under another name than its
co_filename. (Blind round 1: wrong_realpath.py.)"""
import os

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("filename_as_dynamo_prints_it",)


def find_graph_breaks(fn, *args, **kwargs):
    return [GraphBreak(os.path.realpath(b.filename), b.lineno, b.reason)
            for b in _ref.find_graph_breaks(fn, *args, **kwargs)]
