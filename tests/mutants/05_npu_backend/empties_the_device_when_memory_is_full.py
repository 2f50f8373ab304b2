"""Mistake: when NPU.compile says program memory is full and the backend holds no program it could release, it
empties the device with DEVICE.release_all() and compiles again. On a real NPU every call then runs on the device --
by freeing the programs other code compiled and still holds, which fail the next time their owners call them.
(Under the checker the call is refused; the attempt swallows the refusal and falls back as the reference does.)"""
from checker.kit import load_reference
from katas.common import npu

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("memory_others_hold_falls_back_for_that_call",)


class EmptiesTheDevice(type(_ref.PROGRAMS)):
    def get(self, key, compile_program):
        try:
            return super().get(key, compile_program)
        except npu.NPUCompileError as error:
            if error.what != "program":
                raise
            try:
                npu.DEVICE.release_all()  # the NPU is full of programs that are not ours: make room anyway
            except Exception:  # noqa: BLE001 - the hurried learner's catch-all
                raise error from None
            return super().get(key, compile_program)


_ref.PROGRAMS.__class__ = EmptiesTheDevice
