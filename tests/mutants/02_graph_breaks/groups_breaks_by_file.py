"""Mistake: the finder lists the breaks grouped by file (files in the order they first appear, each file's
breaks in execution order): a caller breaking at its line 6, then in a helper of another module, then at its
own line 9 comes out [caller:6, caller:9, helper:5]. Blind round 2: wrong_group_by_file.py, miss F."""
import contextlib
import logging
import warnings

import torch
import torch._dynamo

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ('breaks_in_two_files_in_order',)


def find_graph_breaks(fn, *args, **kwargs):
    found = _ref.find_graph_breaks(fn, *args, **kwargs)
    files = list(dict.fromkeys(brk.filename for brk in found))
    return sorted(found, key=lambda brk: files.index(brk.filename))
