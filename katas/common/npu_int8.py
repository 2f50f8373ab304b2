"""The NPU's int8 unit moved to katas/common/npu/int8.py; this name stays so that an attempt written before the
move still imports (it is the same module object, not a copy)."""
import sys

from katas.common.npu import int8

sys.modules[__name__] = int8
