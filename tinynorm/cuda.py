"""The CUDA device: whether it is usable, synchronizing with it, and sharing memory with other libraries.

``import tinynorm`` never imports ``numba.cuda`` (slow, and it looks for a driver): this module imports
it only when one of its functions is first called. ``device='cuda'`` needs the ``numba-cuda`` package
(``pip install 'tinynorm[cuda]'``) and an NVIDIA GPU, or Numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1`` set before tinynorm is imported: slow, for tests).

Kernels run asynchronously: a call returns once the work is queued. Reading values back to the host
(``.numpy()``, ``.item()``) waits for them; :func:`synchronize` waits explicitly, e.g. before stopping
a timer.

Interop goes through the CUDA Array Interface (``__cuda_array_interface__``), which CuPy arrays,
PyTorch CUDA tensors and Numba device arrays implement: :func:`from_cuda_array` shares their memory,
and tinynorm's own CUDA tensors expose the interface, so ``torch.as_tensor(t, device='cuda')`` or
``cupy.asarray(t)`` share theirs.

Memory comes from a caching allocator (:mod:`tinynorm.backends.cuda.runtime.memory`): blocks that tensors no
longer use are kept for the next tensor of the same size class instead of being freed, which would
stop the GPU. :func:`memory_allocated`, :func:`memory_reserved` and :func:`empty_cache` work as in
PyTorch.
"""
from __future__ import annotations

import functools
import importlib.util
from typing import TYPE_CHECKING, Any

import numba
import numpy as np

from . import dtypes

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["is_available", "device_count", "synchronize", "from_cuda_array", "memory_allocated", "memory_reserved",
           "empty_cache"]


@functools.cache
def _unavailable_reason() -> str | None:
    """Why ``device='cuda'`` cannot work in this process, or None when it can (probed once)."""
    if importlib.util.find_spec("numba_cuda") is None:
        return "the numba-cuda package is not installed; install the cuda extra: pip install 'tinynorm[cuda]'"
    try:
        from numba import cuda
    except ImportError as error:
        return f"numba-cuda is installed but does not import ({error}); reinstall the cuda extra"
    if not cuda.is_available():
        return ("numba-cuda found no usable NVIDIA GPU and driver; run on a machine with one, or set "
                "NUMBA_ENABLE_CUDASIM=1 before importing tinynorm to use Numba's (slow) CUDA simulator")
    return None


def is_available() -> bool:
    """True when tensors can live on ``'cuda'``: numba-cuda is installed and finds a GPU (or the
    simulator is on). Imports ``numba.cuda`` on the first call."""
    return _unavailable_reason() is None


def require() -> None:
    """Raise ``RuntimeError`` saying why and how to fix it, unless the CUDA device is usable."""
    reason = _unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"device 'cuda' is not available: {reason}")


def device_count() -> int:
    """How many CUDA devices numba-cuda sees (0 when CUDA is unavailable). tinynorm uses the first."""
    if not is_available():
        return 0
    from numba import cuda

    return len(cuda.gpus)


def synchronize() -> None:
    """Wait until every kernel queued on the CUDA device has finished."""
    require()
    from numba import cuda

    cuda.synchronize()


def _block_cache() -> Any:
    """The caching allocator's bookkeeping (:mod:`tinynorm.backends.cuda.runtime.memory`); the simulator has none."""
    require()
    if numba.config.ENABLE_CUDASIM:
        raise RuntimeError("tinynorm does not count device memory in Numba's CUDA simulator, where device "
                           "arrays are host numpy arrays and nothing is cached")
    from .backends.cuda.runtime.memory import block_cache

    return block_cache()


def memory_allocated() -> int:
    """Bytes of device memory that tinynorm's arrays occupy, in the allocator's size classes (as
    ``torch.cuda.memory_allocated``). Not counted in the simulator (``RuntimeError``)."""
    return _block_cache().allocated_bytes


def memory_reserved() -> int:
    """Bytes the caching allocator holds: what arrays occupy plus free blocks kept for reuse (as
    ``torch.cuda.memory_reserved``). Not counted in the simulator (``RuntimeError``)."""
    return _block_cache().reserved_bytes


def empty_cache() -> None:
    """Give the free blocks the caching allocator keeps back to the driver, e.g. for another library
    (as ``torch.cuda.empty_cache``). Memory that tensors use stays. Nothing to do in the simulator."""
    if numba.config.ENABLE_CUDASIM:
        require()  # nothing is cached there
    else:
        _block_cache().release_free_blocks()


def from_cuda_array(obj: Any) -> Tensor:
    """A CUDA tensor sharing memory with ``obj``, any object with ``__cuda_array_interface__``.

    Writes through either side are seen by the other, and the tensor keeps ``obj`` alive. Strided
    and negatively strided views keep their layout (no copy). A PyTorch tensor that requires grad
    refuses to export its memory: pass ``t.detach()``. The result does not require grad.
    """
    interface = getattr(obj, "__cuda_array_interface__", None)
    if interface is None:
        raise TypeError(
            f"from_cuda_array: expected an object with __cuda_array_interface__ (a CuPy array, a PyTorch "
            f"CUDA tensor, a Numba device array), got {type(obj).__name__}; use tinynorm.tensor() for host data"
        )
    require()
    if interface.get("mask") is not None:
        raise ValueError("from_cuda_array: masked arrays are not supported (the interface has a 'mask')")
    dtype = np.dtype(interface["typestr"])
    try:
        dtypes.as_dtype(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"from_cuda_array: dtype {dtype} is not supported by tinynorm") from None
    shape = tuple(int(n) for n in interface["shape"])
    strides = _element_strides(interface.get("strides"), shape, dtype)
    # The storage spans the lowest to the highest element address; negative strides start below data.
    low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    length = high - low + 1 if all(shape) else 0
    pointer = interface["data"][0] + low * dtype.itemsize
    storage = _device_memory(pointer, length, dtype, obj, interface.get("stream"))

    from .backends.cuda.array import CudaArray
    from .tensor import Tensor  # tensor.py imports this module (for require)

    return Tensor._from_array(CudaArray(storage, shape, strides, offset=-low), "cuda")


def _element_strides(byte_strides: Any, shape: tuple[int, ...], dtype: np.dtype) -> tuple[int, ...]:
    """The interface's byte strides (None: C-contiguous) as element strides."""
    if byte_strides is None:
        from .backends.cuda.array import contiguous_strides

        return contiguous_strides(shape)
    if any(s % dtype.itemsize for s in byte_strides):
        raise ValueError(
            f"from_cuda_array: byte strides {tuple(byte_strides)} are not multiples of the item size "
            f"{dtype.itemsize} of {dtype}; tinynorm views count strides in elements"
        )
    return tuple(int(s) // dtype.itemsize for s in byte_strides)


def _device_memory(pointer: int, length: int, dtype: np.dtype, owner: Any, stream: Any) -> Any:
    """A storage of ``length`` items at ``pointer`` that keeps ``owner`` alive.

    Work queued on the interface's ``stream`` is waited for first, as Numba's own import does. The
    simulator's device memory is host memory, so there the pointer is viewed through numpy's array
    interface instead.
    """
    from .backends.cuda.runtime import memory

    if not numba.config.ENABLE_CUDASIM:
        if stream:
            from numba import cuda

            cuda.external_stream(stream).synchronize()
        return memory.foreign(pointer, length, dtype, owner)
    description = {"data": (pointer, False), "shape": (length,), "strides": None, "typestr": dtype.str, "version": 3}
    return memory.host_storage(np.asarray(_HostView(description, owner)))


class _HostView:
    """Memory seen through numpy's ``__array_interface__``; arrays made from it keep ``owner`` alive."""

    def __init__(self, description: dict, owner: Any) -> None:
        self.__array_interface__ = description
        self.owner = owner
