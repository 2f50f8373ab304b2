"""The NPU's ahead-of-time runtime moved to katas/common/npu/aot.py; this name stays so that an attempt written
before the move still imports (it is the same module object, not a copy)."""
import sys

from katas.common.npu import aot

sys.modules[__name__] = aot
