"""Device memory: the storages CUDA arrays view, from a caching allocator as in PyTorch, and copies.

A :class:`Storage` is ``length`` items of one dtype at a device ``address``. Every ``CudaArray`` is a
view on one (``tinynorm/backends/cuda/array.py``), and a storage is itself a flat array argument for
kernels. Its memory comes from one of three places: a block of the cache (:func:`allocate`), another
library's memory (:func:`foreign`, for ``from_cuda_array``), or, in Numba's CUDA simulator, a host
numpy array (the simulator's device memory is host memory).

Numba alone would give every array its own ``cuMemAlloc`` and free it with ``cuMemFree``; both are
slow driver calls, and "managing memory allocations using cudaMalloc and cudaFree causes the GPU to
synchronize across all executing CUDA streams" (CUDA Programming Guide, 4.3). A training step makes
hundreds of temporaries, so blocks are kept instead: when the last view of a storage is gone, the
storage dies and its block goes to a free list of its size class, where the next request of that
class takes it. After a first training step, a step allocates nothing from the driver. Reusing a
block at once is safe without events because every tinynorm kernel and copy runs in order on the
default stream: a kernel writing a reused block is queued after every kernel that read it. (Work that
another library queues on its own non-blocking stream on a tinynorm array must finish before the
array is dropped, as with PyTorch's ``record_stream``.)

``TINYNORM_NO_CUDA_MEMORY_CACHING=1`` (PyTorch: ``PYTORCH_NO_CUDA_MEMORY_CACHING=1``) frees blocks
instead of keeping them. In the simulator nothing is cached or counted.
"""
from __future__ import annotations

import functools
import importlib
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from .compiler import config, cuda

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

    ``allocate(size)`` gets a new block from the driver (an object with an int ``address``, freed when
    dropped; raising :class:`OutOfMemoryError` when the GPU is full) and ``flush()`` makes the driver
    free what was dropped; the cache itself is plain bookkeeping, so it is tested with a fake driver.
    """

    def __init__(self, allocate: Callable[[int], Any], flush: Callable[[], None],
                 keep_free_blocks: bool = True) -> None:
        self._allocate = allocate
        self._flush = flush
        self._keep = keep_free_blocks
        self._free: dict[int, list[Any]] = {}
        self._lock = threading.RLock()  # storages may die on any thread, at any allocation
        self.allocated_bytes = 0  # in blocks that storages use (size classes, not requests)
        self.reserved_bytes = 0  # allocated plus free blocks held for reuse
        self.driver_allocations = 0  # blocks ever asked from the driver

    def take(self, nbytes: int) -> tuple[Any, int]:
        """A block for ``nbytes`` and its size: a free one of the same class, else a new one."""
        size = size_class(nbytes)
        with self._lock:
            blocks = self._free.get(size)
            block = blocks.pop() if blocks else self._new_block(size)
            self.allocated_bytes += size
        return block, size

    def give_back(self, block: Any, size: int) -> None:
        """Return a block no storage uses any more: kept for reuse, or dropped (the driver frees it)."""
        with self._lock:
            self.allocated_bytes -= size
            if self._keep:
                self._free.setdefault(size, []).append(block)
            else:
                self.reserved_bytes -= size

    def release_free_blocks(self) -> None:
        """Let the driver free every block no storage uses (``torch.cuda.empty_cache``)."""
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


# ------------------------------------------------------------------------------------- storages
class Storage:
    """``length`` items of ``dtype`` at the device ``address``, kept alive by ``owner``; a flat array.

    As a kernel argument a storage is the 1-D C-contiguous array of all its items: its launch key and
    kernel parameters are fixed when it is made (see :mod:`.launch`). In the simulator ``address`` is
    None and ``owner`` is the host numpy array that stands for device memory.
    """

    __slots__ = ("address", "dtype", "kernel_parameters", "launch_key", "length", "owner")

    def __init__(self, address: int | None, length: int, dtype: np.dtype, owner: Any) -> None:
        self.address = address
        self.length = length
        self.dtype = dtype
        self.owner = owner
        self.launch_key = dtype, 1
        itemsize = dtype.itemsize
        self.kernel_parameters = [0, 0, length, itemsize, address, length, itemsize]

    # The array attributes kernels read of a flat argument.
    ndim = 1

    @property
    def size(self) -> int:
        return self.length

    @property
    def shape(self) -> tuple[int]:
        return (self.length,)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"version": 3, "shape": (self.length,), "typestr": self.dtype.str, "strides": None,
                "data": (self.address or 0, False), "stream": None}

    def to_numpy(self) -> np.ndarray:
        """All items as a new host array (waits for the GPU)."""
        return copy_to_host(self, 0, self.length)

    def numba_array(self) -> Any:
        """The storage as a Numba device array (the simulator's stand-in there), for Numba's dispatcher."""
        return numba_view(self, (self.length,), (self.dtype.itemsize,), 0)


class LentStorage(Storage):
    """A storage on a block of the cache, which goes back to the cache when the storage dies.

    Every view of the storage references it, so Python's reference count says when no array uses the
    block; ``__del__`` then gives it back. (Numba's own pointers keep a second count through
    ``weakref.finalize`` objects, which make lending several times dearer; measured: docs/benchmarks.md.)
    """

    __slots__ = ("size_class",)

    def __init__(self, block: Any, size: int, length: int, dtype: np.dtype, cache: BlockCache) -> None:
        address = block.address  # Storage.__init__, inlined: this runs at every allocation
        self.address = address
        self.length = length
        self.dtype = dtype
        self.owner = cache, block
        self.launch_key = dtype, 1
        self.kernel_parameters = [0, 0, length, dtype.itemsize, address, length, dtype.itemsize]
        self.size_class = size

    def __del__(self) -> None:
        cache, block = self.owner
        cache.give_back(block, self.size_class)


def allocate(length: int, dtype: np.dtype) -> Storage:
    """A new uninitialised storage of ``length`` items of ``dtype`` (a numpy dtype), from the cache."""
    nbytes = length * dtype.itemsize
    if config.ENABLE_CUDASIM:
        return Storage(None, length, dtype, np.empty(length, dtype))
    if nbytes == 0:
        return Storage(0, 0, dtype, None)
    cache = block_cache()
    block, size = cache.take(nbytes)
    return LentStorage(block, size, length, dtype, cache)


def foreign(address: int, length: int, dtype: np.dtype, owner: Any) -> Storage:
    """A storage on memory another library owns (``owner`` is kept alive, nothing is cached)."""
    return Storage(address, length, dtype, owner)


def host_storage(host: np.ndarray) -> Storage:
    """In the simulator: a storage on the flat host array ``host`` itself (no copy)."""
    return Storage(None, host.size, host.dtype, host)


def storage_from_host(host: np.ndarray) -> Storage:
    """A new storage holding the values of the host array ``host``, flattened in C order."""
    host = np.ascontiguousarray(host).reshape(-1)
    storage = allocate(host.size, host.dtype)
    copy_to_device(storage, host)
    return storage


def suffix(storage: Storage, start: int) -> Storage:
    """The items from ``start`` on, as a storage of their own that keeps ``storage`` alive (kernels that
    index from the start of a flat array read a view's items this way)."""
    if start == 0:
        return storage
    if config.ENABLE_CUDASIM:
        return host_storage(storage.owner[start:])
    return Storage(storage.address + start * storage.dtype.itemsize, storage.length - start, storage.dtype, storage)


def copy_to_device(storage: Storage, host: np.ndarray) -> None:
    """Copy the C-contiguous host array ``host`` (of the storage's dtype and length) into ``storage``."""
    if host.size:
        numba_view(storage, (storage.length,), (storage.dtype.itemsize,), 0).copy_to_device(host)


def copy_to_host(storage: Storage, start: int, count: int) -> np.ndarray:
    """Items ``[start, start + count)`` of ``storage`` as a new host array (waits for the GPU)."""
    if count == 0:
        return np.empty(0, storage.dtype)
    itemsize = storage.dtype.itemsize
    return numba_view(storage, (count,), (itemsize,), start * itemsize).copy_to_host()


def numba_view(storage: Storage, shape: tuple, byte_strides: tuple, byte_offset: int) -> Any:
    """A Numba device array of ``shape`` and ``byte_strides`` into ``storage``, ``byte_offset`` bytes in:
    what Numba's dispatcher and copies take. (In the simulator: its stand-in over the host array.)"""
    if config.ENABLE_CUDASIM:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        start = byte_offset // storage.dtype.itemsize
        base = storage.owner[start:] if start < storage.length else storage.owner[:0]
        return FakeCUDAArray(np.lib.stride_tricks.as_strided(base, shape, byte_strides))
    interface = {"version": 3, "shape": shape, "strides": byte_strides, "typestr": storage.dtype.str,
                 "data": ((storage.address or 0) + byte_offset, False), "stream": None}
    return cuda.from_cuda_array_interface(interface, owner=storage, sync=False)


# ---------------------------------------------------------------------------------- the device
class _DriverBlock:
    """A block from Numba's memory manager: its ``address``; freed (deferred) when dropped."""

    __slots__ = ("address", "pointer")

    def __init__(self, pointer: Any) -> None:
        self.pointer = pointer  # Numba's owned pointer: dropping it queues the cuMemFree
        self.address = int(pointer.device_pointer)


def _driver_allocate(size: int) -> _DriverBlock:
    """A new block of ``size`` bytes from Numba's memory manager (``Context.memalloc``)."""
    driver = importlib.import_module(f"{cuda.__name__}.cudadrv.driver")  # the selected compiler's driver layer
    try:
        return _DriverBlock(_context().memalloc(size))
    except driver.CudaAPIError as error:
        if error.code == driver.binding.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
            raise OutOfMemoryError(f"CUDA out of memory allocating {size} bytes") from error
        raise


def _driver_flush() -> None:
    """Free now what Numba's memory manager has queued for freeing (dropped blocks among them).

    Numba has no public call for it: its context keeps the queue as ``deallocations`` (a
    ``_PendingDeallocs``); tests/cuda/test_numba_private.py fails when that changes.
    """
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
