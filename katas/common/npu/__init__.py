"""The simulated NPU, the accelerator the katas compile for: one package, three parts.

* `device` (katas/common/npu/device.py): the device itself: which ops it runs (NPU_OPS), compiling an FX graph
  to a program, running it, program memory, the statistics the checks read. Katas 4 to 6 and 8 compile for it;
  its docstring is the device's manual.
* `aot` (katas/common/npu/aot.py): the ahead-of-time runtime of kata 8: a program saved inside an exported
  model and run from a fresh process.
* `int8` (katas/common/npu/int8.py): the int8 unit of kata 9: its kernels as torch ops.

`from katas.common.npu import NPU, DEVICE, ...` reads the device. `aot` and `int8` register torch ops when they
are imported, so importing this package does not import them.
"""
from katas.common.npu import device as _device
from katas.common.npu.device import (
    FLOPS_PER_US,
    HOST_BYTES_PER_US,
    INT8_KERNELS,
    INT8_MAX_INNER,
    KERNELS,
    LAUNCH_OVERHEAD_US,
    LAYOUT_OPS,
    MAX_RESIDENT_PROGRAMS,
    NPU,
    NPU_DTYPES,
    NPU_INT8_OPS,
    NPU_OPS,
    DeviceClient,
    DeviceService,
    KeptPrograms,
    NodeRun,
    NPUCompileError,
    NPUDevice,
    NPUFallbackWarning,
    NPUProgram,
    NPURuntimeError,
    NPUStats,
    canonical_name,
    connect_to_device_service,
    int8_add_kernel,
    int8_linear_kernel,
    requantize,
    sync_releases,
)


def __getattr__(name: str):
    """`DEVICE`, and the device module's other names: a worker replaces `DEVICE` with a client of the checks'
    device when it connects (connect_to_device_service), so it is read from the device module every time."""
    try:
        return getattr(_device, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
