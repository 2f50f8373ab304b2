"""Mistake: when program memory is full, release the program compiled first (first in, first out) instead of the one
used longest ago. A program that runs on every call is released as soon as it is the oldest, and compiled again
on the next call, while programs nobody calls any more stay resident."""
from checker.kit import load_reference
from katas.common.npu import KeptPrograms, NPUCompileError

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("full_program_memory_releases_the_least_recently_used",)


class FirstInFirstOut(KeptPrograms):
    def get(self, key, compile_program):
        kept = self._programs.get(key)
        if kept is not None and kept.resident:
            return kept  # a use does not make it newer
        self._programs.pop(key, None)
        while True:
            try:
                compiled = compile_program()
                break
            except NPUCompileError as error:
                if error.what != "program" or not self._programs:
                    raise
                self._release_oldest()
        self._programs[key] = compiled
        return compiled


_ref.PROGRAMS = FirstInFirstOut()
