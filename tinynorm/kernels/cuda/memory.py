"""Device memory for tinynorm's CUDA arrays: a caching allocator, as in PyTorch.

Numba gives every device array its own ``cuMemAlloc`` and frees it with ``cuMemFree`` (deferred,
ten at a time). Both are slow driver calls, and "managing memory allocations using cudaMalloc and
cudaFree causes the GPU to synchronize across all executing CUDA streams" (CUDA Programming Guide,
4.3). A training step makes hundreds of temporaries, so with Numba's allocator the host would keep
waiting for the GPU to drain, and the GPU would then idle while the host queues the next kernels.

:func:`empty` keeps memory instead. When the last array or view using a block is gone, the block
goes to a free list of its size class, and the next request of that class takes it from there: after
the first training step, a step allocates nothing from the driver. Reusing a block at once is safe
without events because every tinynorm kernel and copy runs in order on the default stream: a kernel
that writes a reused block is queued after every kernel that read it. (A library that queues work on
a tinynorm array on its own non-blocking stream must finish that work before the array is dropped, as
with PyTorch's ``record_stream``.)

Lifetimes are Python's own. A lent block is wrapped in a :class:`LentPointer`, a Numba memory pointer
that every device array and view using the block references (a view's pointer names it as owner); when
the last of them is gone, the pointer dies and gives the block back to its free list.

``TINYNORM_NO_CUDA_MEMORY_CACHING=1`` (PyTorch: ``PYTORCH_NO_CUDA_MEMORY_CACHING=1``) frees blocks
instead of keeping them. In Numba's CUDA simulator device arrays are host numpy arrays: :func:`empty`
is plain ``cuda.device_array`` there and nothing is cached or counted.

:func:`view` and :func:`rows` make views of device arrays for a fraction of the host time Numba's own
slicing takes: the kernel wrappers make several per call.
"""
from __future__ import annotations

import functools
import math
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import config, cuda

SMALL_BLOCK_BYTES = 1 << 20  # up to 1 MiB, sizes are rounded up to a multiple of ALIGNMENT
ALIGNMENT = 512  # bytes; PyTorch rounds to 512 too (and cuMemAlloc aligns to at least 256)
STEPS_PER_POWER_OF_TWO = 4  # above 1 MiB: four size classes per power of two, under 25% waste


class OutOfMemoryError(RuntimeError):
    """The GPU has no room for a new block, even after the cached free blocks were released."""


def size_class(nbytes: int) -> int:
    """The block size that serves a request of ``nbytes`` (> 0).

    Few classes make reuse likely (a sequence of slightly different lengths shares blocks); small
    steps keep the waste low. Up to 1 MiB: multiples of 512 bytes. Above: 1.25, 1.5, 1.75 and 2
    times a power of two.
    """
    if nbytes <= SMALL_BLOCK_BYTES:
        step = ALIGNMENT
    else:
        step = (1 << ((nbytes - 1).bit_length() - 1)) // STEPS_PER_POWER_OF_TWO
    return -(-nbytes // step) * step


class BlockCache:
    """Free device blocks by size class, and the counts PyTorch reports.

    ``allocate(size)`` gets a new block from the driver (raising :class:`OutOfMemoryError` when the
    GPU is full) and ``flush()`` makes the driver free what was released; the cache itself is plain
    bookkeeping, so it is tested with a fake allocator.
    """

    def __init__(self, allocate: Callable[[int], Any], flush: Callable[[], None],
                 keep_free_blocks: bool = True) -> None:
        self._allocate = allocate
        self._flush = flush
        self._keep = keep_free_blocks
        self._free: dict[int, list[Any]] = {}
        self._lock = threading.RLock()  # finalizers may run on any thread, at any allocation
        self.allocated_bytes = 0  # in blocks that arrays use (size classes, not requests)
        self.reserved_bytes = 0  # allocated plus free blocks held for reuse
        self.driver_allocations = 0  # blocks ever asked from the driver

    def take(self, nbytes: int) -> tuple[Any, int]:
        """A block for ``nbytes`` and its size: a free one of the same class, else a new one."""
        size = size_class(nbytes)
        with self._lock:
            blocks = self._free.get(size)
            if blocks:
                block = blocks.pop()
            else:
                block = self._new_block(size)
            self.allocated_bytes += size
        return block, size

    def give_back(self, block: Any, size: int) -> None:
        """Return a block no array uses any more: kept for reuse, or dropped (the driver frees it)."""
        with self._lock:
            self.allocated_bytes -= size
            if self._keep:
                self._free.setdefault(size, []).append(block)
            else:
                self.reserved_bytes -= size

    def release_free_blocks(self) -> None:
        """Let the driver free every block no array uses (``torch.cuda.empty_cache``)."""
        with self._lock:
            released = sum(size * len(blocks) for size, blocks in self._free.items())
            self._free.clear()
            self.reserved_bytes -= released
        self._flush()

    def _new_block(self, size: int) -> Any:
        try:
            block = self._allocate(size)
        except OutOfMemoryError:
            self.release_free_blocks()  # free blocks of other sizes may make room
            try:
                block = self._allocate(size)
            except OutOfMemoryError as error:
                raise OutOfMemoryError(
                    f"CUDA out of memory: cannot allocate {size} bytes; tinynorm's arrays use "
                    f"{self.allocated_bytes} bytes and it holds no free blocks. Free tensors you no "
                    "longer need, or use smaller batches") from error
        self.driver_allocations += 1
        self.reserved_bytes += size
        return block


# ---------------------------------------------------------------------------------- the device
def _driver_allocate(size: int) -> Any:
    """A new block of ``size`` bytes from Numba's memory manager (an owned pointer, freed when dropped)."""
    from numba.cuda.cudadrv.driver import CudaAPIError, binding

    try:
        return _context().memalloc(size)
    except CudaAPIError as error:
        if error.code == binding.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
            raise OutOfMemoryError(f"CUDA out of memory allocating {size} bytes") from error
        raise


def _driver_flush() -> None:
    """Free now what Numba's memory manager has queued for freeing (dropped blocks among them)."""
    _context().deallocations.clear()


@functools.cache
def _context() -> Any:
    """Numba's context for the current device, looked up once (tinynorm uses one GPU)."""
    return cuda.current_context()


@functools.cache
def block_cache() -> BlockCache:
    """The process's cache for the current device (tinynorm uses one GPU)."""
    keep = os.environ.get("TINYNORM_NO_CUDA_MEMORY_CACHING", "0") in ("", "0")
    return BlockCache(_driver_allocate, _driver_flush, keep_free_blocks=keep)


def kernel_parameters_of(array: Any) -> list[int]:
    """The kernel parameters Numba passes for a device array: meminfo and parent (0 outside Numba's
    runtime), size, item size, data pointer, shape and strides in bytes (``launch.flatten`` is the
    reference). ``int(gpu_data.device_pointer)`` reads the pointer in a quarter of the time of Numba's
    ``device_ctypes_pointer``."""
    return [0, 0, array.size, array.dtype.itemsize, int(array.gpu_data.device_pointer), *array.shape,
            *array.strides]


if not config.ENABLE_CUDASIM:  # the simulator has no memory pointers (nor blocks to lend)
    from numba.cuda.cudadrv import dummyarray
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    from numba.cuda.cudadrv.driver import MemoryPointer, binding

    class ContiguousDeviceArray(DeviceNDArray):
        """A Numba device array that :meth:`make` builds C-contiguous in a fraction of the host time of
        Numba's constructor.

        ``DeviceNDArray.__init__`` checks and normalizes the shape and strides and builds a "dummy
        array" (Numba's host-side model of the layout, used to slice, reshape and type it) for every
        array: 1.3 µs, at every allocation and view. tinynorm's arrays are C-contiguous by construction,
        so :meth:`make` sets the attributes directly (0.4 µs) and the dummy array is built only if
        something asks for it. In every other respect it is a ``DeviceNDArray``: Numba's own slicing
        builds new ones through the inherited constructor.
        """

        @classmethod
        def make(cls, shape: tuple, dtype: np.dtype, gpu_data: Any) -> ContiguousDeviceArray:
            array = cls.__new__(cls)
            array.shape = shape
            array.ndim = len(shape)
            array.strides = contiguous_strides(shape, dtype.itemsize)
            array.dtype = dtype
            array.size = math.prod(shape)
            array.alloc_size = array.size * dtype.itemsize
            array.gpu_data = gpu_data
            array.stream = 0
            # The launch path's two questions about an array argument, answered once (an array never
            # changes, and a step hands most arrays to two or three kernels): what decides its Numba
            # type, and its kernel parameters. Never modify them.
            array.launch_key = dtype, array.ndim
            array.kernel_parameters = kernel_parameters_of(array)
            return array

        @functools.cached_property
        def _dummy(self) -> Any:  # the inherited constructor sets it; make() leaves it to first use
            return dummyarray.Array.from_desc(0, self.shape, self.strides, self.dtype.itemsize)

        # make() sets these two for each array; an array that Numba's own slicing or reshaping builds
        # (through the inherited constructor, as this class) works them out at its first launch.
        @functools.cached_property
        def launch_key(self) -> tuple:
            if not self.is_c_contiguous():
                raise KeyError("not a C-contiguous device array")  # launch.launch: use the dispatcher
            return self.dtype, self.ndim

        kernel_parameters = functools.cached_property(kernel_parameters_of)

        def is_c_contiguous(self) -> bool:
            """Without the dummy array: the C-order strides (size-1 dims included, stricter than Numba)."""
            return self.strides == contiguous_strides(self.shape, self.dtype.itemsize)

    class LentPointer(MemoryPointer):
        """Numba's memory pointer for a block of the cache, which gives the block back when it dies.

        Arrays hold it as their ``gpu_data``; a view's pointer (from :func:`view`, or from Numba's own
        slicing) keeps it as its owner. So Python's reference count says when no array uses the block.
        (Numba's own ``AutoFreePointer`` keeps a second count, through an ``OwnedPointer`` and two
        ``weakref.finalize`` objects: lending cost 5.8 µs that way, 1.3 µs this way, measured on this
        project's CPU machine with numba-cuda 0.30.4.)
        """

        def __init__(self, context: Any, block: Any, nbytes: int, cache: BlockCache, size: int) -> None:
            super().__init__(context, block.device_pointer, nbytes)  # no finalizer: not "managed" by Numba
            self._lent = (cache, block, size)

        def __del__(self) -> None:
            cache, block, size = self._lent
            cache.give_back(block, size)


def lend(cache: BlockCache, nbytes: int, context: Any = None) -> Any:
    """A Numba memory pointer to ``nbytes`` of a block of ``cache``, given back when no array uses it."""
    block, size = cache.take(nbytes)
    return LentPointer(context, block, nbytes, cache, size)


def empty(shape: Any, dtype: Any) -> Any:
    """A new uninitialised C-contiguous device array, its memory from the cache."""
    dtype = np.dtype(dtype)
    shape = _as_shape(shape)
    nbytes = math.prod(shape) * dtype.itemsize
    if config.ENABLE_CUDASIM or nbytes == 0:
        return cuda.device_array(shape, dtype=dtype)
    return ContiguousDeviceArray.make(shape, dtype, lend(block_cache(), nbytes, _context()))


def to_device(array: np.ndarray) -> Any:
    """A device copy of the host ``array`` (small flags and tables), its memory from the cache."""
    array = np.ascontiguousarray(array)
    if config.ENABLE_CUDASIM or array.size == 0:
        return cuda.to_device(array)
    device_array = empty(array.shape, array.dtype)
    device_array.copy_to_device(array)
    return device_array


# ------------------------------------------------------------------------------------ views
def view(array: Any, offset: int, shape: Any) -> Any:
    """The C-contiguous device array of ``shape`` starting ``offset`` elements into the C-contiguous
    device array ``array``, sharing its memory: ``array.reshape(-1)[offset:offset + n].reshape(shape)``.

    Built directly from a view of the memory pointer, because Numba's own indexing is slow on the host:
    a slice costs about 15 µs and a reshape about 4 µs, this about 1.7 µs (numba-cuda 0.30.4, measured
    with tinynorm's pointers on this project's CPU machine). Kernel wrappers make several per call.
    """
    shape = _as_shape(shape)
    if offset == 0 and shape == array.shape:
        return array
    size = math.prod(shape)
    if not 0 <= offset <= offset + size <= array.size:
        raise ValueError(f"view: elements [{offset}, {offset + size}) are outside an array of {array.size}")
    if config.ENABLE_CUDASIM:
        return array.reshape(array.size)[offset:offset + size].reshape(shape)
    if size == array.size:  # a reshape (offset 0): shares the pointer, as Numba's own reshape does
        return ContiguousDeviceArray.make(shape, array.dtype, array.gpu_data)
    itemsize = array.dtype.itemsize
    pointer = _sub_pointer(array.gpu_data, offset * itemsize, (offset + size) * itemsize)
    return ContiguousDeviceArray.make(shape, array.dtype, pointer)


def _sub_pointer(pointer: Any, start: int, stop: int) -> Any:
    """Bytes ``[start, stop)`` of a device memory pointer, as a pointer that keeps the memory alive.

    Memory lent by the cache stays lent while a pointer references its :class:`LentPointer`, so a plain
    pointer owned by it will do (0.6 µs). Other memory gets Numba's own view, which counts its users
    through an ``OwnedPointer`` (2.7 µs).
    """
    owner = pointer.owner
    if isinstance(owner, LentPointer):
        address = binding.CUdeviceptr(int(pointer.device_pointer) + start)
        return MemoryPointer(pointer.context, address, stop - start, owner=owner)
    return pointer.view(start, stop)


def rows(array: Any) -> tuple:
    """The rows ``array[0], array[1], ...`` of a C-contiguous device array, as views (see :func:`view`)."""
    inner = math.prod(array.shape[1:])
    return tuple(view(array, k * inner, array.shape[1:]) for k in range(array.shape[0]))


def _as_shape(shape: Any) -> tuple:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(map(int, shape))


@functools.lru_cache(maxsize=4096)  # a training step meets the same few shapes again and again
def contiguous_strides(shape: tuple, itemsize: int = 1) -> tuple:
    """The strides of a C-contiguous array of ``shape``: in elements, or in bytes given ``itemsize``."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))
