"""``CudaArray``: the array type of the CUDA backend, a view on device memory.

A CUDA array is a :class:`~.runtime.memory.Storage` (device memory: an address, a length, a dtype,
and the block it holds) seen through a ``shape``, per-dimension ``strides`` and an ``offset``, both
counted in elements. Transposing, broadcasting (stride 0), basic slicing and reshaping a contiguous
array only make a new view. Kernels take CUDA arrays as they are: the launch path reads a contiguous
array's address, shape and strides from it (``launch_key`` and ``kernel_parameters``, worked out once
per array: a view never changes), and kernels that read any layout take its storage, offset and
strides. :meth:`CudaArray.contiguous` copies a view that is not contiguous.

It offers the part of numpy's ndarray interface that tinynorm's ops use, so an op's forward and
backward are the same code on both devices: operators with broadcasting and numpy's dtype rules
(:mod:`.elementwise`), ``astype``, ``reshape``, ``transpose``/``.T``, basic indexing as views and
assignment through views (:mod:`.shape`), advanced indexing (:mod:`.indexing`) and reductions
(:mod:`.reductions`). It never converts itself to a host array silently: ``np.asarray(a)`` raises,
copies to the host are explicit (``to_numpy``), as in PyTorch.

Imports: those methods are the backend's own functions (``.T`` is :func:`.shape.transpose`, ``-a`` is
:func:`.elementwise.negative`, ``copy`` the strided-copy kernel), and those functions and kernels take and
make CudaArrays, so this module and :mod:`.shape`, :mod:`.elementwise`, :mod:`.creation` and the kernels'
``strided``, ``elementwise`` and ``_shared`` import one another. The cycle is kept on purpose: the class is
defined first and imports those modules at its end, which keeps a dozen one-line methods beside the class
they belong to (``Tensor`` attaches its many op methods from other modules instead; here that would split
a small class for little gain).
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import is_basic_index
from .runtime import memory
from .runtime.memory import Storage

Shape = tuple[int, ...]


@functools.lru_cache(maxsize=4096)  # a training step meets the same few shapes again and again
def contiguous_strides(shape: tuple, itemsize: int = 1) -> tuple:
    """The strides of a C-contiguous array of ``shape``: in elements, or in bytes given ``itemsize``."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _operator(name: str, reflected: bool = False) -> Any:
    """The method ``self <op> other`` (or ``other <op> self`` when ``reflected``) calling the
    elementwise function ``name``; NotImplemented for operand types it does not know, so Python can
    try the other operand's method."""
    def method(self: CudaArray, other: Any) -> Any:
        if not isinstance(other, _OPERAND_TYPES):
            return NotImplemented
        function = getattr(elementwise, name)
        return function(other, self) if reflected else function(self, other)

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _in_place(name: str) -> Any:
    """The method ``self <op>= other``: the elementwise function ``name`` writing into ``self``
    (which may be a view: the results go through its strides)."""
    def method(self: CudaArray, other: Any) -> Any:
        if not isinstance(other, _OPERAND_TYPES):
            return NotImplemented
        getattr(elementwise, name)(self, other, out=self)
        return self

    method.__name__ = f"__i{name}__"
    return method


class CudaArray:
    """An n-d view (``shape``, ``strides``, ``offset`` in elements) on a device ``storage``."""

    __slots__ = ("_contiguous", "dtype", "kernel_parameters", "launch_key", "offset", "shape", "storage", "strides")
    __array_ufunc__ = None  # numpy operators and ufuncs defer to this class (ndarray + CudaArray -> __radd__)

    def __init__(self, storage: Storage, shape: Shape, strides: Shape | None = None, offset: int = 0) -> None:
        self.storage = storage
        self.shape = shape = tuple(map(int, shape))
        if strides is None:
            self.strides = contiguous_strides(shape)
            self._contiguous = True
        else:
            self.strides = tuple(map(int, strides))
            self._contiguous = None  # worked out when first asked
        self.offset = int(offset)
        self.dtype = storage.dtype
        # launch_key and kernel_parameters are set by __getattr__ the first time a launch reads them

    # --------------------------------------------------------------------------- construction
    @classmethod
    def empty(cls, shape: Shape, dtype: Any) -> CudaArray:
        """A new uninitialised C-contiguous array (``shape`` an int or a tuple).

        A new array is almost always a kernel's output, so its launch data are set at once (on a device:
        the simulator's storages have no address and its launches take no plans)."""
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
        dtype = np.dtype(dtype)
        storage = memory.allocate(math.prod(shape), dtype)
        array = cls(storage, shape)
        if storage.address is not None:
            array.launch_key = dtype, len(shape)
            array.kernel_parameters = [0, 0, storage.length, dtype.itemsize, storage.address, *shape,
                                       *contiguous_strides(shape, dtype.itemsize)]
        return array

    @classmethod
    def from_host(cls, host: np.ndarray) -> CudaArray:
        """A new C-contiguous device copy of the host array ``host``."""
        return cls(memory.storage_from_host(host), host.shape)

    # ------------------------------------------------------------------------------ attributes
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def is_contiguous(self) -> bool:
        """C-contiguous: the elements lie in C order, back to back (size-1 dims may have any stride).
        Worked out once: a view never changes."""
        if self._contiguous is None:
            self._contiguous = _in_c_order(self.shape, self.strides)
        return self._contiguous

    def contiguous(self) -> CudaArray:
        """This array if it is C-contiguous, else a C-contiguous copy."""
        if self.is_contiguous():
            return self
        out = CudaArray.empty(self.shape, self.dtype)
        copy_strided(out.storage, self.storage, self.offset, self.strides, self.shape)
        return out

    # ------------------------------------------------------------------------ kernel arguments
    def __getattr__(self, name: str) -> Any:
        """The two attributes the launch path reads of an array argument, set when first asked (so a
        launch reads plain attributes): ``launch_key``, what decides its Numba type (dtype and ndim), and
        ``kernel_parameters``, what Numba passes the kernel for it (meminfo and parent, both 0, the number
        of items, the item size, the data pointer, the shape and the byte strides). A view that is not
        C-contiguous has neither (a KeyError: such a view goes to Numba's dispatcher, or is copied first)."""
        if name not in ("launch_key", "kernel_parameters"):
            raise AttributeError(f"'CudaArray' object has no attribute {name!r}")
        if not self.is_contiguous():
            raise KeyError(f"not a C-contiguous array: shape {self.shape}, strides {self.strides}")
        itemsize = self.dtype.itemsize
        self.launch_key = self.dtype, len(self.shape)
        self.kernel_parameters = [0, 0, self.size, itemsize, self.storage.address + self.offset * itemsize,
                                  *self.shape, *contiguous_strides(self.shape, itemsize)]
        return getattr(self, name)

    def numba_array(self) -> Any:
        """This view as a Numba device array (the simulator's stand-in there), for Numba's dispatcher."""
        itemsize = self.dtype.itemsize
        return memory.numba_view(self.storage, self.shape, tuple(s * itemsize for s in self.strides),
                                 self.offset * itemsize)

    def subarray(self, offset: int, shape: Shape) -> CudaArray:
        """The C-contiguous array of ``shape`` starting ``offset`` elements into this C-contiguous array,
        sharing its memory: ``a.reshape(-1)[offset:offset + n].reshape(shape)`` without the checks."""
        shape = (shape,) if isinstance(shape, int) else shape
        size = math.prod(shape)
        if not 0 <= offset <= offset + size <= self.size:
            raise ValueError(f"subarray: elements [{offset}, {offset + size}) are outside an array of {self.size}")
        return CudaArray(self.storage, shape, None, self.offset + offset)

    def rows(self) -> tuple:
        """The rows ``a[0], a[1], ...`` of this C-contiguous array, as views."""
        inner = math.prod(self.shape[1:])
        return tuple(self.subarray(k * inner, self.shape[1:]) for k in range(self.shape[0]))

    def flat_storage(self) -> Storage:
        """The storage from this view's offset on, for kernels that index with ``strided_offset`` from the
        start of their storage (then pass ``offset=0`` and this array's ``strides``)."""
        return memory.suffix(self.storage, self.offset)

    # ------------------------------------------------------------------------------ conversion
    def astype(self, dtype: Any, copy: bool = True) -> CudaArray:
        """A C-contiguous copy converted to ``dtype`` (this array itself when ``copy`` is False and the
        dtype is already ``dtype``)."""
        dtype = np.dtype(dtype)
        if dtype == self.dtype and not copy:
            return self
        return elementwise.assign(CudaArray.empty(self.shape, dtype), self)

    def copy(self) -> CudaArray:
        """A new C-contiguous array with these values."""
        return self.astype(self.dtype)

    def item(self) -> Any:
        """The one element as a Python number (one device-to-host copy)."""
        if self.size != 1:
            raise ValueError(f"can only convert an array of size 1 to a Python scalar, got shape {self.shape}")
        return memory.copy_to_host(self.storage, self.offset, 1)[0].item()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(f"the truth value of an array with {self.size} elements is ambiguous; "
                             f"use a.any() or a.all()")
        return bool(self.item())

    def to_numpy(self) -> np.ndarray:
        """A new C-contiguous host (numpy) array with these values (waits for the GPU)."""
        source = self.contiguous()
        return memory.copy_to_host(source.storage, source.offset, source.size).reshape(self.shape)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError("a CudaArray lives in GPU memory and is not converted to a numpy array implicitly: "
                        "copy it to the host explicitly (Tensor.numpy() / Tensor.cpu(), or the backend's to_numpy)")

    def __repr__(self) -> str:
        values = np.array2string(self.to_numpy(), separator=", ", prefix="CudaArray(")
        return f"CudaArray({values}, dtype={self.dtype})"

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA Array Interface (version 3) of this view, for PyTorch, CuPy and ``cuda.as_cuda_array``.

        Under Numba's CUDA simulator the storage lives in host memory and has no device pointer, so
        the attribute does not exist there (``hasattr`` is False) rather than pointing at host memory.
        """
        if self.storage.address is None:
            raise AttributeError("__cuda_array_interface__: this array's storage has no device pointer "
                                 "(the CUDA simulator keeps arrays in host memory)")
        pointer = self.storage.address + self.offset * self.itemsize if self.size else 0
        strides = None if self.is_contiguous() else tuple(s * self.itemsize for s in self.strides)
        return {"version": 3, "shape": self.shape, "typestr": self.dtype.str, "data": (pointer, False),
                "strides": strides, "stream": None}

    # ------------------------------------------------------------------------ views and indexing
    @property
    def T(self) -> CudaArray:
        """The view with the axes reversed."""
        return views.transpose(self)

    def transpose(self, *axes: Any) -> CudaArray:
        """The view with the axes permuted: ``a.transpose()``, ``a.transpose(1, 0)`` or ``a.transpose((1, 0))``."""
        if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
            axes = axes[0]
        return views.transpose(self, axes or None)

    def reshape(self, *new_shape: Any) -> CudaArray:
        """This array with a new shape (``a.reshape(2, -1)`` or ``a.reshape((2, -1))``): a view when it is
        contiguous, else a copy."""
        if len(new_shape) == 1 and not isinstance(new_shape[0], (int, np.integer)):
            new_shape = new_shape[0]
        return views.reshape(self, new_shape)

    def __getitem__(self, index: Any) -> CudaArray:
        """Basic indexing (ints, slices, None, ...) gives a view; array and bool indices a copy."""
        if is_basic_index(index):
            return views.basic_view(self, index)
        from . import indexing
        return indexing.getitem(self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        """Write ``value`` (scalar, CudaArray or host array; broadcast and cast) into ``self[index]``."""
        if is_basic_index(index):
            elementwise.assign(views.basic_view(self, index), value)
        else:
            from . import indexing
            indexing.setitem(self, index, value)

    # -------------------------------------------------------------------------------- reductions
    def sum(self, axis: Any = None, keepdims: bool = False) -> CudaArray:
        from . import reductions
        return reductions.sum(self, axis, keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> CudaArray:
        from . import reductions
        return reductions.mean(self, axis, keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> CudaArray:
        from . import reductions
        return reductions.amax(self, axis, keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> CudaArray:
        from . import reductions
        return reductions.amin(self, axis, keepdims)

    def any(self, axis: Any = None, keepdims: bool = False) -> CudaArray:
        """Whether any element (along ``axis``) is nonzero: the maximum of the bool flags."""
        return self._flags().max(axis, keepdims)

    def all(self, axis: Any = None, keepdims: bool = False) -> CudaArray:
        """Whether every element (along ``axis``) is nonzero: the minimum of the bool flags."""
        return self._flags().min(axis, keepdims)

    def _flags(self) -> CudaArray:
        return self if self.dtype == np.bool_ else self != 0

    # --------------------------------------------------------------------------------- operators
    __add__, __radd__, __iadd__ = _operator("add"), _operator("add", True), _in_place("add")
    __sub__, __rsub__, __isub__ = _operator("subtract"), _operator("subtract", True), _in_place("subtract")
    __mul__, __rmul__, __imul__ = _operator("multiply"), _operator("multiply", True), _in_place("multiply")
    __truediv__, __rtruediv__ = _operator("true_divide"), _operator("true_divide", True)
    __itruediv__ = _in_place("true_divide")
    __pow__, __rpow__ = _operator("power"), _operator("power", True)
    __and__, __rand__ = _operator("logical_and"), _operator("logical_and", True)
    __or__, __ror__ = _operator("logical_or"), _operator("logical_or", True)
    __lt__, __le__ = _operator("less"), _operator("less_equal")
    __gt__, __ge__ = _operator("greater"), _operator("greater_equal")
    __eq__, __ne__ = _operator("equal"), _operator("not_equal")  # type: ignore[assignment]
    __hash__ = None  # type: ignore[assignment]  (== is elementwise, as numpy's)

    def __neg__(self) -> CudaArray:
        return elementwise.negative(self)

    def __abs__(self) -> CudaArray:
        return elementwise.abs(self)

    def __invert__(self) -> CudaArray:
        return elementwise.logical_not(self)


def _in_c_order(shape: Shape, strides: Shape) -> bool:
    """Whether a view of ``shape`` and ``strides`` has its elements in C order, back to back."""
    if strides == contiguous_strides(shape):  # the usual case, without the loop
        return True
    step = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != step:
            return False
        step *= n
    return True


_OPERAND_TYPES = (CudaArray, bool, int, float, np.bool_, np.integer, np.floating, np.ndarray)


def check_array(name: str, value: Any) -> CudaArray:
    """``value``, after checking it is a CudaArray: the backend functions' first check, a TypeError
    naming the argument (a host array must be copied to the device explicitly)."""
    if not isinstance(value, CudaArray):
        raise TypeError(f"{name} must be a CudaArray, got {type(value).__name__}")
    return value


# Imported last: these modules import CudaArray from this one (the methods above use them at call time).
from ...kernels.cuda.strided import copy_strided  # noqa: E402
from . import elementwise  # noqa: E402
from . import shape as views  # noqa: E402  (a module: not to be confused with an array's shape)
