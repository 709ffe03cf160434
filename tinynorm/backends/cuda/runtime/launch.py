"""Kernel launches with little host overhead: Numba compiles, the driver launches.

Launching through Numba's dispatcher costs tens of microseconds of host time per kernel (see
docs/benchmarks.md): it types every argument, looks up the compiled overload, converts
each array to a memory view and packs a fresh parameter block. A small norm call would spend more time
on the host than its kernels take on the GPU.

:func:`launch` does that work once per kernel and argument types (a *plan*): Numba compiles the kernel
for those types (``dispatcher.compile``), the plan keeps the compiled function's driver handle and one
parameter block, and every launch only writes the argument values into the block and calls
``cuLaunchKernel`` (from ``cuda-bindings``, which numba-cuda depends on). The block must hold exactly
what Numba's own launch would pass: :func:`flatten` is the reference (checked byte for byte against
Numba's ``_prepare_args`` in tests/cuda/test_cuda_ptx.py), and on a GPU each plan also compares its
parameter sizes with the driver's ``arguments_info`` for the kernel.

Array arguments are tinynorm's own: a ``Storage`` (``runtime/memory.py``) or a C-contiguous
``CudaArray``. Each carries ``launch_key`` (what decides its Numba type: dtype and ndim; a KeyError for
a layout no plan takes) and ``kernel_parameters`` (meminfo and parent, which are 0 outside Numba's
runtime, the item count, the item size, the data pointer, the shape and the byte strides), worked out
once per array, and ``numba_array()`` for the dispatcher. Scalars, ``None``, shape and stride tuples and
tuples of arrays (the optimizers) are planned too.

A kernel or argument no plan takes goes through Numba's dispatcher, and the reason is kept in
:data:`refusals`; :data:`counts` says how many launches took each path. A failed driver launch
switches the fast path off for the process, with a warning, and relaunches through the dispatcher.
One switch turns it off: ``TINYNORM_FAST_LAUNCH=0`` in the environment, or :func:`set_fast_launch`.
In the CUDA simulator, and with the numba-cuda-mlir compiler (``runtime/compiler.py``: its kernels take
another parameter layout), every launch goes through the dispatcher.

Numba's dispatcher cannot launch a kernel with a ``None`` argument (numba-cuda 0.30.4 raises
``NotImplementedError(none, None)`` in ``_prepare_args``), although the compiled kernel has a parameter
for it (a null pointer). Kernels decorated with :func:`jit` get a dispatcher extension that passes
``None`` as that null pointer, which every optional argument needs (a norm's ``weight=None``, an
optimizer's unused state). Every kernel of ``tinynorm.kernels.cuda`` is made with :func:`jit` and
launched with :func:`launch` (tests/cuda/test_launch_coverage.py checks both).
"""
from __future__ import annotations

import collections
import ctypes
import os
import struct
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from .compiler import NAME, config, cuda, from_dtype, types

# The Numba type of a scalar argument, by its Python type (what Numba's ``typeof`` gives an argument).
_SCALAR_TYPES = {int: types.int64, float: types.float64, bool: types.boolean,
                 **{kind: from_dtype(np.dtype(kind)) for kind in (
                     np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                     np.float16, np.float32, np.float64)}}
INT64_RANGE = range(-2**63, 2**63)  # Python ints outside it are typed uint64 (or rejected) by Numba
SLOT_BYTES = 8  # every parameter gets its own 8-byte slot; the driver copies the parameter's own size
GPU_ONLY_OPTIONS = ("max_registers",)  # cuda.jit options the simulator does not take


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
    """``cuda.jit(cache=True, **options)`` plus :class:`NoneAsNullPointer` (the simulator takes neither
    extensions nor the GPU-only options, e.g. ``max_registers``; numba-cuda-mlir's kernels declare no
    parameter for a ``None`` argument, so the null pointer is numba-cuda's alone)."""
    options.setdefault("cache", True)
    if config.ENABLE_CUDASIM:
        options = {key: value for key, value in options.items() if key not in GPU_ONLY_OPTIONS}
    elif NAME == "numba-cuda":
        options["extensions"] = [NONE_AS_NULL_POINTER]
    decorator = cuda.jit(**options)
    return decorator if function is None else decorator(function)


# ----------------------------------------------------------------------------------- flattening
def flatten(ty: Any, value: Any) -> list[tuple[int, int]]:
    """The kernel parameters Numba passes for one argument of Numba type ``ty``: ``(size in bytes,
    value)`` pairs, the value an int whose little-endian low ``size`` bytes are the parameter.

    An array is 5 + 2 * ndim parameters: meminfo and parent (0 outside Numba's runtime), the number
    of items, the item size, the data pointer, the shape and the strides in bytes (a 0-d array: the
    first five), read here from its ``__cuda_array_interface__``. A scalar (bool, integer or float of
    any width) is its own bits; a tuple (a shape or strides), its items in order; ``None``, one 8-byte
    zero.
    """
    if isinstance(ty, types.Array):
        interface = value.__cuda_array_interface__
        shape = tuple(interface["shape"])
        itemsize = np.dtype(interface["typestr"]).itemsize
        strides = interface["strides"] or _c_strides(shape, itemsize)
        size = int(np.prod(shape, dtype=np.int64))
        return [(8, v) for v in (0, 0, size, itemsize, interface["data"][0], *shape, *strides)]
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


def _c_strides(shape: tuple, itemsize: int) -> tuple:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _writer(ty: Any) -> Callable[[Any], list[int]]:
    """A function giving the slot values of one argument of type ``ty`` (what :func:`flatten` gives,
    without the sizes, specialized ahead of time for the hot path: arrays, ``None``, booleans, integers,
    floats, tuples of integers (the shapes and strides of the strided kernels) and of arrays)."""
    if isinstance(ty, types.Float):
        return _float_writer(ty)
    if isinstance(ty, types.Array):  # tinynorm's arrays work out their parameters once
        return lambda array: array.kernel_parameters
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
    """The bits of a float argument, packed by ``struct`` (an order of magnitude cheaper than through
    numpy scalars, as :func:`flatten` does). A plan's float parameters come from values of their own type (a
    float32 parameter from a ``np.float32``), so the value always fits."""
    pack = struct.Struct({16: "<e", 32: "<f", 64: "<d"}[ty.bitwidth]).pack
    return lambda value: [int.from_bytes(pack(value), "little")]


# ---------------------------------------------------------------------------------------- plans
class Plan:
    """One compiled kernel's driver handle and its reusable parameter block.

    ``slots`` holds one 8-byte slot per parameter and ``pointers`` the address of each slot: the
    ``void **kernelParams`` of ``cuLaunchKernel``, whose address never changes. ``driver`` is
    ``cuda.bindings.driver`` (the fake device of the tests passes a stand-in that records launches).
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


class Refused(Exception):
    """Why a kernel and its argument types get no plan (they go through Numba's dispatcher)."""


def _argument_key(value: Any) -> Any:
    """What decides an argument's Numba type, cheaply: an array's dtype and ndim (its ``launch_key``),
    a scalar's Python type, a tuple's items' keys. Raises KeyError or AttributeError for anything a
    plan does not take."""
    kind = type(value)
    if kind is tuple:
        return (tuple, *map(_argument_key, value))
    if kind is int and value not in INT64_RANGE:
        raise KeyError("an int outside int64 is typed by its value")
    if value is None or kind in _SCALAR_TYPES:
        return kind
    return value.launch_key


def expected_type(value: Any) -> Any:
    """The Numba type a plan gives ``value`` (the type Numba's own ``typeof`` gives it; tested)."""
    if value is None:
        return types.none
    if type(value) is tuple:
        return types.BaseTuple.from_types([expected_type(item) for item in value])
    if type(value) in _SCALAR_TYPES:
        return _SCALAR_TYPES[type(value)]
    return types.Array(from_dtype(value.dtype), value.ndim, "C")


def driver_function(kernel: Any, argtypes: tuple) -> tuple[Any, list[int] | None]:
    """Compile ``kernel`` for ``argtypes`` (or load it from Numba's cache) and return its driver
    handle (a ``CUfunction``) and its parameter sizes as the driver reports them (None where the driver
    cannot say: ``arguments_info`` needs a CUDA 12.4+ driver).

    numba-cuda has no public accessor for a compiled kernel's ``CUfunction``: this reads its code library
    as numba-cuda's own ``_Kernel.launch`` does. tests/cuda/test_numba_private.py fails when that changes.
    """
    try:
        from cuda.bindings import driver
    except ImportError as error:
        raise Refused(f"cuda-bindings does not import: {error}") from error
    compiled = kernel.compile(argtypes)
    if compiled.cooperative or compiled.debug:
        raise Refused("a cooperative or debug kernel: Numba's launch does extra work for it")
    cufunc = compiled._codelibrary.get_cufunc()
    try:
        sizes = [param.size for param in cufunc.kernel.arguments_info]
    except Exception:  # noqa: BLE001  (an older driver or cuda.core: nothing to compare with)
        sizes = None
    return driver.CUfunction(int(cufunc.handle)), sizes


def _driver() -> Any:
    from cuda.bindings import driver

    return driver


def make_plan(kernel: Any, args: tuple) -> Plan:
    """The plan for ``kernel`` with ``args``' types; :class:`Refused` (with the reason) when there is none."""
    argtypes = tuple(expected_type(a) for a in args)
    function, driver_sizes = driver_function(kernel, argtypes)
    plan = Plan(_driver(), function, argtypes, args)
    if driver_sizes is not None and driver_sizes != plan.sizes:
        raise Refused(f"parameter sizes {plan.sizes} differ from the driver's {driver_sizes}")
    return plan


# ------------------------------------------------------------------------------------- launching
# The plans pack numba-cuda's parameter layout: with another compiler (or in the simulator) every launch
# goes through the compiler's own dispatcher.
_FAST_POSSIBLE = NAME == "numba-cuda" and not config.ENABLE_CUDASIM
_fast = {"enabled": _FAST_POSSIBLE and os.environ.get("TINYNORM_FAST_LAUNCH", "1") != "0"}
_plans: dict[tuple, Plan | None] = {}
refusals: dict[str, str] = {}
"""Why launches went through Numba's dispatcher: the kernel and argument kinds, and the reason."""
counts: collections.Counter = collections.Counter()
"""Launches by path: ``counts["driver"]`` (plans) and ``counts["dispatcher"]``."""


def set_fast_launch(enabled: bool) -> bool:
    """Switch the driver-level launch on or off (it stays off in the simulator and with numba-cuda-mlir);
    returns the old setting."""
    old = _fast["enabled"]
    _fast["enabled"] = bool(enabled) and _FAST_POSSIBLE
    return old


def fast_launch_enabled() -> bool:
    return _fast["enabled"]


def _dims(dims: Any) -> tuple[int, int, int]:
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return (dims + (1, 1))[:3]


def _refuse(kernel: Any, args: tuple, reason: str) -> None:
    name = getattr(getattr(kernel, "py_func", kernel), "__qualname__", repr(kernel))
    refusals[f"{name}{tuple(type(a).__name__ for a in args)}"] = reason


def launch(kernel: Any, grid: Any, block: Any, args: tuple, shared_bytes: int = 0) -> None:
    """``kernel[grid, block, 0, shared_bytes](*args)`` on the default stream, through the driver when
    a plan exists (see the module docstring), else through Numba's dispatcher."""
    if _fast["enabled"]:
        try:
            key = (kernel, *map(_argument_key, args))
        except (KeyError, AttributeError) as error:
            _refuse(kernel, args, f"an argument no plan takes: {error}")
            key = None
        if key is not None:
            plan = _plans.get(key, False)
            if plan is False:
                try:
                    plan = make_plan(kernel, args)
                except Refused as error:
                    _refuse(kernel, args, str(error))
                    plan = None
                _plans[key] = plan
            if plan is not None:
                try:
                    plan.launch(_dims(grid), _dims(block), shared_bytes, args)
                    counts["driver"] += 1
                    return
                except Exception as error:  # noqa: BLE001  (any failure: back to the dispatcher, for good)
                    _fast["enabled"] = False
                    _refuse(kernel, args, f"cuLaunchKernel failed: {error}")
                    warnings.warn(f"tinynorm: the low-overhead kernel launch failed ({error}); using Numba's "
                                  f"dispatcher from now on", RuntimeWarning, stacklevel=2)
    dispatch(kernel, grid, block, shared_bytes, args)
    counts["dispatcher"] += 1


def dispatch(kernel: Any, grid: Any, block: Any, shared_bytes: int, args: tuple) -> None:
    """Launch through Numba's dispatcher, tinynorm's arrays handed over as Numba device arrays."""
    kernel[grid, block, 0, shared_bytes](*map(_numba_argument, args))


def _numba_argument(value: Any) -> Any:
    if type(value) is tuple:
        return tuple(map(_numba_argument, value))
    to_numba = getattr(value, "numba_array", None)
    return value if to_numba is None else to_numba()
