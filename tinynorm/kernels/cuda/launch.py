"""Kernel launches with little host overhead: Numba's compiled kernel, launched through the driver.

Launching through Numba's dispatcher costs 30-37 µs of host time for a kernel with 4 arrays and 2
scalars (H200, numba-cuda 0.30.4; /work/shared/notes/numba.md): it types every argument, looks up
the compiled overload, converts each array to a memory view and packs a fresh parameter block. A
small norm call therefore spends more time on the host than its kernels take on the GPU.

:func:`launch` does the dispatcher's work once per kernel and argument types (a *plan*): the first
call goes through the dispatcher (which compiles the kernel and launches it), then the plan keeps
the compiled function's driver handle and a parameter block, and later calls only write the
argument values into that block and call ``cuLaunchKernel`` (from ``cuda-bindings``, which
numba-cuda already depends on). The block must match what the kernel expects exactly, so it is
filled the way Numba fills it (:func:`flatten`, checked against Numba's own ``_prepare_args`` in
tests/cuda/test_cuda_ptx.py), and on a GPU each plan also checks its parameter sizes against the
driver's ``arguments_info`` for the kernel.

This uses private parts of numba-cuda (a compiled overload's code library), so it is guarded:
anything unexpected while making a plan leaves that kernel on the dispatcher, and a failed driver
launch switches the fast path off for the process (with a warning) and relaunches through the
dispatcher. One switch turns it off: ``TINYNORM_FAST_LAUNCH=0`` in the environment, or
:func:`set_fast_launch`. In the CUDA simulator every launch goes through the dispatcher.

Numba's dispatcher cannot launch a kernel with a ``None`` argument (numba-cuda 0.30.4 raises
``NotImplementedError(none, None)`` in ``_prepare_args``), although the compiled kernel has a
parameter for it (a null pointer). Kernels decorated with :func:`jit` get a dispatcher extension
that passes ``None`` as that null pointer, which every optional argument needs (a norm's
``weight=None``, an optimizer's unused state, a reduction's output not asked for). Every kernel of
``tinynorm.kernels.cuda`` is made with :func:`jit` and launched with :func:`launch`
(tests/cuda/test_launch_coverage.py checks both).
"""
from __future__ import annotations

import ctypes
import os
import struct
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import config, cuda, types
from numba.cuda.np.numpy_support import from_dtype

from . import memory

# The Numba type of a scalar argument, by its Python type (what Numba's ``typeof`` gives an argument).
_SCALAR_TYPES = {int: types.int64, float: types.float64, bool: types.boolean,
                 **{kind: from_dtype(np.dtype(kind)) for kind in (
                     np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                     np.float16, np.float32, np.float64)}}
# The device arrays tinynorm makes (memory.empty, memory.view), which carry their launch key and kernel
# parameters; None in the simulator, whose arrays never take the driver-level path.
_OWN_ARRAY = getattr(memory, "ContiguousDeviceArray", None)
INT64_RANGE = range(-2**63, 2**63)  # Python ints outside it are typed uint64 (or rejected) by Numba
SLOT_BYTES = 8  # every parameter gets its own 8-byte slot; the driver copies the parameter's own size


class NoneAsNullPointer:
    """Dispatcher extension: a ``None`` argument goes to its kernel parameter as a 64-bit zero.

    Numba gives a ``None`` argument one 8-byte parameter (the opaque type's pointer) that the kernel
    never reads; the dispatcher has no case for it. A module-level class, so that cached kernels
    (which pickle their extensions) can load it again.
    """

    def prepare_args(self, ty: Any, val: Any, stream: Any = 0, retr: Any = None) -> tuple[Any, Any]:
        if isinstance(ty, types.NoneType):
            return types.uint64, 0
        return ty, val


NONE_AS_NULL_POINTER = NoneAsNullPointer()


def jit(function: Callable | None = None, **options: Any) -> Any:
    """``cuda.jit(cache=True, **options)`` plus :class:`NoneAsNullPointer` (the simulator takes no extensions)."""
    options.setdefault("cache", True)
    if not config.ENABLE_CUDASIM:
        options["extensions"] = [NONE_AS_NULL_POINTER]
    decorator = cuda.jit(**options)
    return decorator if function is None else decorator(function)


# ----------------------------------------------------------------------------------- flattening
def flatten(ty: Any, value: Any) -> list[tuple[int, int]]:
    """The kernel parameters Numba passes for one argument of Numba type ``ty``: ``(size in bytes,
    value)`` pairs, the value an int whose little-endian low ``size`` bytes are the parameter.

    An array is 5 + 2 * ndim parameters: meminfo and parent (0 outside Numba's runtime), the number
    of items, the item size, the data pointer, the shape and the strides in bytes (a 0-d array: the
    first five). A scalar (bool, integer or float of any width) is its own bits; a tuple (a shape or
    strides), its items in order; ``None``, one 8-byte zero.
    """
    if isinstance(ty, types.Array):
        pointer = value.device_ctypes_pointer.value or 0
        return [(8, v) for v in (0, 0, value.size, value.dtype.itemsize, pointer, *value.shape, *value.strides)]
    if isinstance(ty, types.NoneType):
        return [(8, 0)]
    if isinstance(ty, types.Boolean):
        return [(1, int(bool(value)))]
    if isinstance(ty, types.Integer):
        return [(ty.bitwidth // 8, int(value) & ((1 << ty.bitwidth) - 1))]
    if isinstance(ty, types.Float):
        bits = np.dtype(f"f{ty.bitwidth // 8}").type(value).view(f"u{ty.bitwidth // 8}")
        return [(ty.bitwidth // 8, int(bits))]
    if isinstance(ty, types.BaseTuple):
        return [p for t, v in zip(ty, value) for p in flatten(t, v)]
    raise NotImplementedError(f"no low-overhead launch for an argument of type {ty}")


def _writer(ty: Any) -> Callable[[Any], list[int]]:
    """A function giving the slot values of one argument of type ``ty`` (what :func:`flatten` gives,
    without the sizes, specialized ahead of time for the hot path: arrays, ``None``, booleans, integers,
    floats, tuples of integers (the shapes and strides of the strided kernels) and of arrays)."""
    if isinstance(ty, types.Float):
        return _float_writer(ty)
    if isinstance(ty, types.Array):  # tinynorm's own arrays keep their parameters; others are read now
        return lambda a: a.kernel_parameters if type(a) is _OWN_ARRAY else memory.kernel_parameters_of(a)
    if isinstance(ty, types.NoneType):
        return lambda _: [0]
    if isinstance(ty, types.Boolean):
        return lambda v: [int(bool(v))]
    if isinstance(ty, types.Integer):
        mask = (1 << ty.bitwidth) - 1
        return lambda v: [int(v) & mask]
    if isinstance(ty, types.UniTuple) and isinstance(ty.dtype, types.Integer):
        mask = (1 << ty.dtype.bitwidth) - 1
        return lambda t: [int(v) & mask for v in t]
    if isinstance(ty, types.UniTuple):  # the optimizers' tuples of arrays: each item as it would be alone
        write = _writer(ty.dtype)
        return lambda t: [slot for item in t for slot in write(item)]
    return lambda v: [value for _, value in flatten(ty, v)]


def _float_writer(ty: Any) -> Callable[[Any], list[int]]:
    """The bits of a float argument, packed by ``struct`` (0.15 µs; through numpy scalars, as
    :func:`flatten` does, 2 µs). A plan's float parameters come from values of their own type (a
    float32 parameter from a ``np.float32``), so the value always fits."""
    pack = struct.Struct({16: "<e", 32: "<f", 64: "<d"}[ty.bitwidth]).pack
    return lambda value: [int.from_bytes(pack(value), "little")]


# ---------------------------------------------------------------------------------------- plans
class _Plan:
    """One compiled kernel's driver handle and its reusable parameter block.

    ``slots`` holds one 8-byte slot per parameter and ``pointers`` the address of each slot: the
    ``void **kernelParams`` of ``cuLaunchKernel``, whose address never changes. ``driver`` is
    ``cuda.bindings.driver`` (a benchmark without a GPU passes a stand-in that counts launches).
    """

    def __init__(self, driver: Any, function: Any, argtypes: tuple, args: tuple) -> None:
        self.driver = driver
        self.function = function
        self.stream = driver.CUstream(0)  # Numba's default stream is the legacy default stream
        self.writers = [_writer(ty) for ty in argtypes]
        self.sizes = [size for ty, value in zip(argtypes, args) for size, _ in flatten(ty, value)]
        count = len(self.sizes)
        self.slots = (ctypes.c_uint64 * count)()
        self.pack = struct.Struct(f"<{count}Q").pack_into  # all slots in one call: half numpy's time
        first = ctypes.addressof(self.slots)
        self.pointers = (ctypes.c_void_p * count)(*(first + SLOT_BYTES * k for k in range(count)))
        self.pointers_address = ctypes.addressof(self.pointers)
        self.lock = threading.Lock()  # two threads must not fill the block at the same time

    def launch(self, grid: tuple[int, int, int], block: tuple[int, int, int], shared_bytes: int,
               args: tuple) -> None:
        values: list[int] = []
        for write, arg in zip(self.writers, args):
            values += write(arg)
        with self.lock:
            self.pack(self.slots, 0, *values)
            (error,) = self.driver.cuLaunchKernel(self.function, *grid, *block, shared_bytes, self.stream,
                                                  self.pointers_address, 0)
        if error != self.driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuLaunchKernel failed: {error!r}")


def _check_parameter_sizes(cufunc: Any, sizes: list[int]) -> None:
    """Compare the flattened parameter sizes with the driver's view of the kernel, where it has one
    (``Kernel.arguments_info`` needs a CUDA 12.4+ driver; without it the tests' check stands alone)."""
    try:
        info = cufunc.kernel.arguments_info
    except Exception:  # noqa: BLE001  (an older driver or cuda.core: nothing to compare with)
        return
    expected = [param.size for param in info]
    if expected != sizes:
        raise ValueError(f"parameter sizes {sizes} differ from the kernel's {expected}")


def _argument_key(value: Any) -> Any:
    """What decides an argument's Numba type, cheaply: a C-contiguous array's dtype and ndim, a
    scalar's Python type, a tuple's items' keys. Anything else is not planned (raises KeyError, or
    AttributeError for an object that is not a device array)."""
    kind = type(value)
    if kind is _OWN_ARRAY:
        return value.launch_key  # tinynorm's own arrays, C-contiguous by construction, keep theirs
    if kind is tuple:
        return (tuple, *map(_argument_key, value))
    if kind is int and value not in INT64_RANGE:
        raise KeyError("an int outside int64 is typed by its value")
    if value is None or kind in _SCALAR_TYPES:
        return kind
    if value.is_c_contiguous() and 0 not in value.strides:
        return value.dtype, value.ndim
    raise KeyError("not a C-contiguous device array")


def _expected_type(value: Any) -> Any:
    """The Numba type :func:`_argument_key` promises for ``value`` (checked against the dispatcher's)."""
    if value is None:
        return types.none
    if type(value) is tuple:
        return types.BaseTuple.from_types([_expected_type(item) for item in value])
    if type(value) in _SCALAR_TYPES:
        return _SCALAR_TYPES[type(value)]
    return types.Array(from_dtype(value.dtype), value.ndim, "C")


def _make_plan(kernel: Any, args: tuple) -> _Plan | None:
    """A plan for ``kernel`` with ``args``' types, or None when this kernel stays on the dispatcher."""
    argtypes = tuple(kernel.typeof_pyval(a) for a in args)
    compiled = kernel.overloads.get(argtypes)
    if (compiled is None or getattr(kernel, "_launch_config_sensitive", False) or compiled.cooperative
            or compiled.debug or argtypes != tuple(_expected_type(a) for a in args)):
        return None
    from cuda.bindings import driver

    cufunc = compiled._codelibrary.get_cufunc()
    plan = _Plan(driver, driver.CUfunction(int(cufunc.handle)), argtypes, args)
    _check_parameter_sizes(cufunc, plan.sizes)
    return plan


# ------------------------------------------------------------------------------------- launching
_fast = {"enabled": not config.ENABLE_CUDASIM and os.environ.get("TINYNORM_FAST_LAUNCH", "1") != "0"}
_plans: dict[tuple, _Plan | None] = {}


def set_fast_launch(enabled: bool) -> bool:
    """Switch the driver-level launch on or off (it stays off in the simulator); returns the old setting."""
    old = _fast["enabled"]
    _fast["enabled"] = bool(enabled) and not config.ENABLE_CUDASIM
    return old


def fast_launch_enabled() -> bool:
    return _fast["enabled"]


def _dims(dims: Any) -> tuple[int, int, int]:
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return (dims + (1, 1))[:3]


def launch(kernel: Any, grid: Any, block: Any, args: tuple, shared_bytes: int = 0) -> None:
    """``kernel[grid, block, 0, shared_bytes](*args)`` on the default stream, through the driver when
    a plan exists (see the module docstring), else through Numba's dispatcher."""
    if _fast["enabled"]:
        try:
            key = (kernel, *map(_argument_key, args))
        except (KeyError, AttributeError):
            key = None
        if key is not None and key in _plans:
            plan = _plans[key]
            if plan is not None:
                try:
                    plan.launch(_dims(grid), _dims(block), shared_bytes, args)
                    return
                except Exception as error:  # noqa: BLE001  (any failure: back to the dispatcher, for good)
                    _fast["enabled"] = False
                    warnings.warn(f"tinynorm: the low-overhead kernel launch failed ({error}); using Numba's "
                                  f"dispatcher from now on", RuntimeWarning, stacklevel=2)
        elif key is not None:
            kernel[grid, block, 0, shared_bytes](*args)  # compiles the kernel if needed
            try:
                _plans[key] = _make_plan(kernel, args)
            except Exception:  # noqa: BLE001  (private interfaces changed, no driver handle, ...)
                _plans[key] = None
            return
    kernel[grid, block, 0, shared_bytes](*args)
