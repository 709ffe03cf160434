"""``Tensor``: an array on a device, plus what autograd needs to differentiate through it.

A tensor holds its values in ``array`` (a numpy array on the CPU, a ``CudaArray`` on the GPU). If it
``requires_grad``, operations on it are recorded: a tensor computed by an op keeps that op's node in
``grad_fn``, and ``backward()`` walks those nodes back to the leaves (tensors created by the user,
such as parameters), adding gradients into their ``.grad``. The math of every op lives in
``tinynorm.ops``; the methods here are thin, PyTorch-named doorways to it.

Memory can be shared, as in PyTorch: a view (``view``, ``reshape`` where possible, basic indexing,
``transpose``, ``expand``, ``detach`` ...) shows the same memory through another shape, and an in-place
op (``add_``, ``+=``, ``x[i] = v``) writes into it, so every tensor sharing that memory sees the change.
Tensors that share memory share one :class:`VersionCounter`, which each in-place write bumps; autograd
uses it to refuse gradients computed from values that have changed since (``docs/autograd.md``).

This file says what a tensor is: its state, attributes, conversions and autograd state; it imports
no op, because the ops build on ``Tensor``. The methods that are ops are attached to the class when
``tinynorm`` is imported: the operators, in-place methods, ``to`` and ``backward`` from
:mod:`tinynorm.tensor_operators`, and the many ops with the tensor first (``x.sum(1)``,
``x.gather(1, i)``, ``x.sin_()``), family by family, from :mod:`tinynorm.tensor_methods`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from . import cuda as _cuda  # imports numba.cuda only when first used
from . import dtypes, printing
from .backends import canonical_device, get_backend
from .devices import CPU, default_device_name, device, tensor_device
from .size import Size, as_size

if TYPE_CHECKING:
    from .backends.contract import Backend

Shape = tuple[int, ...]
_Device = device  # the class: Tensor has an attribute of the same name


class VersionCounter:
    """How many in-place writes a piece of memory has had; one counter is shared by all the tensors that
    view that memory (a tensor, its views, ``detach()``), and made only when first needed."""

    __slots__ = ("value",)
    writes = 0  # in-place writes in this process so far: a graph node saved after the last one needs no check

    def __init__(self) -> None:
        self.value = 0


class Tensor:
    """A multi-dimensional array with reverse-mode autograd. Create one with ``tinynorm.tensor``."""

    __slots__ = ("array", "requires_grad", "grad", "grad_fn", "device", "_accumulator", "_version_counter", "_view",
                 "__weakref__")
    __array_priority__ = 1000  # numpy defers to Tensor's operators: ndarray * Tensor -> Tensor

    def __init__(self, *data: Any, requires_grad: bool = False, device: Any = CPU) -> None:
        """``Tensor(array)`` wraps a backend array as it is (``Parameter`` builds on this), ``Tensor(t)``
        shares a tensor's memory. Otherwise it is PyTorch's legacy constructor: ``Tensor([1, 2])`` copies
        values into the default float dtype, ``Tensor(2, 3)`` and ``Tensor()`` make zero-filled tensors
        of that size (PyTorch's are uninitialized)."""
        if len(data) == 1 and isinstance(data[0], Tensor):
            self.array, device = data[0].array, data[0].device  # as PyTorch's Tensor(other): the same memory
        elif len(data) == 1 and isinstance(getattr(data[0], "shape", None), tuple) and hasattr(data[0], "dtype") \
                and not isinstance(data[0], np.generic):
            self.array = data[0]
        else:
            self.array = _legacy_values(data, device).array
        self.device = device if type(device) is _Device else tensor_device(canonical_device(device))
        self.grad: Tensor | None = None
        self.grad_fn = None
        self._accumulator = None
        self._version_counter: VersionCounter | None = None
        self._view: tuple[Tensor, tuple] | None = None  # (base, steps) for a view, see _become_view_of
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    @staticmethod
    def _from_array(data: Any, device: str = CPU) -> "Tensor":
        """Wrap a backend array without checks or copies (the fast path used by ops); ``device`` is a
        :class:`tinynorm.device` (ops pass their inputs'), or a device name."""
        tensor = object.__new__(Tensor)
        tensor.array = data
        tensor.device = device if type(device) is _Device else tensor_device(canonical_device(device))
        tensor.grad = None
        tensor.grad_fn = None
        tensor._accumulator = None
        tensor._version_counter = None
        tensor._view = None
        tensor.requires_grad = False
        return tensor

    def __getstate__(self) -> dict:
        """What pickling and ``copy.deepcopy`` keep: the values, device, ``requires_grad`` and ``grad``.
        A tensor computed by an op is refused, as in PyTorch: its graph is not part of its state."""
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment. If you were attempting to deepcopy a module, this may be "
                               "because of a torch.nn.utils.weight_norm usage, see detach().")
        return {"values": self.numpy() if self.device != "cpu" else self.array, "device": self.device,
                "requires_grad": self.requires_grad, "grad": self.grad}

    def __setstate__(self, state: dict) -> None:
        Tensor.__init__(self, get_backend(state["device"]).from_numpy(state["values"]), device=state["device"])
        self.requires_grad, self.grad = state["requires_grad"], state["grad"]

    # ----------------------------------------------------------------------------- attributes
    @property
    def _backend(self) -> Backend:
        return get_backend(self.device)

    @property
    def shape(self) -> Size:
        """The size of each dim, as a :class:`tinynorm.Size` (inside tinynorm, ``t.array.shape`` is cheaper)."""
        return as_size(self.array.shape)

    @property
    def ndim(self) -> int:
        return self.array.ndim

    @property
    def dtype(self) -> dtypes.DType:
        """The type of the elements (``tinynorm.float32``); inside tinynorm, ``t.array.dtype`` is numpy's."""
        return dtypes.of(self.array.dtype)

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def _base(self) -> "Tensor | None":
        """The tensor whose memory this view shows (None unless this is a view), as in PyTorch."""
        return None if self._view is None else self._view[0]

    @property
    def _view_steps(self) -> tuple:
        """How this view is derived from its base: ``(view op, arguments, keyword arguments)`` per step."""
        return () if self._view is None else self._view[1]

    def _is_view(self) -> bool:
        return self._view is not None

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def adjoint(self) -> "Tensor":
        """The conjugate transpose of each matrix (a view): for real tensors, :attr:`mT`."""
        return self.mH

    def dim(self) -> int:
        return self.ndim

    ndimension = dim

    def numel(self) -> int:
        return int(self.array.size)

    nelement = numel

    def element_size(self) -> int:
        """The size of one element in bytes."""
        return self.array.dtype.itemsize

    def is_floating_point(self) -> bool:
        return self.array.dtype.kind == "f"

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.array.shape[0]

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Whether the elements lie in memory in row-major order, back to back."""
        return self._backend.is_contiguous(self.array)

    # ------------------------------------------------------------------------------- interop
    def numpy(self) -> np.ndarray:
        """The values as a numpy array (shared memory on the CPU, a copy from the GPU).

        Unlike PyTorch this also works when the tensor requires grad: it returns the values only,
        like ``t.detach().numpy()``.
        """
        return self._backend.to_numpy(self.array)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        array = self.numpy()
        return array if dtype is None else array.astype(dtype, copy=False)

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA Array Interface of a CUDA tensor's memory, so CuPy, PyTorch and Numba can share it
        (``torch.as_tensor(t, device='cuda')``); CPU tensors have none (AttributeError)."""
        if self.device != "cuda":
            raise AttributeError(f"__cuda_array_interface__: only CUDA tensors have one, this one is on {self.device}")
        return self.array.__cuda_array_interface__

    def item(self) -> Any:
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar (item() needs "
                               f"one element, got shape {tuple(self.array.shape)})")
        return self.numpy().reshape(()).item()

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def _scalar(self) -> Any:
        """The one value for ``float(t)``/``int(t)``: ValueError for more, as in PyTorch (``item()`` raises RuntimeError)."""
        if self.numel() != 1:
            raise ValueError(f"only one element tensors can be converted to Python scalars, got shape "
                             f"{tuple(self.array.shape)}")
        return self.item()

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self.numel()} values is ambiguous; use .any() or .all()")
        return bool(self.item())

    def __index__(self) -> int:
        if self.numel() != 1 or self.dtype.kind not in "biu":
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __repr__(self) -> str:
        """PyTorch's text for a tensor: ``tensor([1.0000, 2.5000], requires_grad=True)`` (see :mod:`.printing`)."""
        return printing.tensor_repr(self)

    def __format__(self, spec: str) -> str:
        """``f"{loss:.3f}"``: a 0-d tensor formats as its value, as in PyTorch."""
        return printing.tensor_format(self, spec)

    # ------------------------------------------------------------------------------ autograd
    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Mark a leaf tensor as a variable whose gradient ``backward()`` should compute."""
        if not isinstance(requires_grad, (bool, np.bool_)):
            raise TypeError(f"requires_grad_(): argument 'requires_grad' must be bool, not "
                            f"{type(requires_grad).__name__}")
        if requires_grad and not dtypes.is_floating(self.dtype):
            raise RuntimeError(
                f"only Tensors of floating point dtype can require gradients, got dtype {self.dtype}; "
                f"convert first, e.g. x.float()"
            )
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
            )
        self.requires_grad = bool(requires_grad)
        return self

    def detach(self) -> "Tensor":
        """The same values (shared memory and version counter), cut from the graph."""
        detached = Tensor._from_array(self.array, self.device)
        detached._version_counter = self._counter()
        return detached

    def detach_(self) -> "Tensor":
        """Cut this tensor from the graph, in place: it becomes a leaf that does not require grad."""
        if self._base is not None and self._base.requires_grad:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn, self.requires_grad = None, False
        return self

    @property
    def data(self) -> "Tensor":
        """The values as a tensor that shares this one's memory, cut from the graph
        (``requires_grad=False``). Writes through it are invisible to autograd: it has a version
        counter of its own, as in PyTorch."""
        return Tensor._from_array(self.array, self.device)

    @data.setter
    def data(self, value: "Tensor") -> None:
        """Make this tensor hold ``value``'s memory (shape and dtype may change), keeping its identity."""
        if not isinstance(value, Tensor):
            raise TypeError(f"data: expected a Tensor, got {type(value).__name__}")
        self.array, self.device = value.array, value.device

    @property
    def _version(self) -> int:
        """How many in-place writes this tensor's memory has had."""
        return 0 if self._version_counter is None else self._version_counter.value

    def _counter(self) -> VersionCounter:
        """This tensor's version counter, made on first use."""
        if self._version_counter is None:
            self._version_counter = VersionCounter()
        return self._version_counter

    def _bump_version(self) -> None:
        """Record an in-place write of this tensor's memory (ops and optimizers call this)."""
        self._counter().value += 1
        VersionCounter.writes += 1

    def _become_view_of(self, source: "Tensor", step: tuple) -> None:
        """Make this tensor (whose array shares ``source``'s memory) a view of ``source``'s base; ``step``
        is ``(view op, its arguments, its keyword arguments)``, how this one was made from ``source``."""
        self._version_counter = source._counter()
        if source._view is None:
            self._view = (source, (step,))
        else:
            base, steps = source._view
            self._view = (base, steps + (step,))

    def retain_grad(self) -> None:
        """Keep the gradient of this non-leaf tensor in ``.grad`` after backward (as PyTorch)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self.retains_grad:
            return

        def store(grad: Tensor) -> None:
            self.grad = grad if self.grad is None else Tensor._from_array(self.grad.array + grad.array, self.device)

        store.retains_grad = True  # type: ignore[attr-defined]
        self.register_hook(store)

    @property
    def retains_grad(self) -> bool:
        """Whether :meth:`retain_grad` was called on this non-leaf tensor."""
        return self.grad_fn is not None and any(getattr(hook, "retains_grad", False) for hook in self.grad_fn.hooks)

    # ----------------------------------------------------------------------- dtype and device

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def cuda(self, device: Any = None, non_blocking: bool = False) -> "Tensor":
        return self.to("cuda" if device is None else _Device("cuda", device) if isinstance(device, int) else device)

    def float(self) -> "Tensor":
        return self.to(dtypes.float32)

    def double(self) -> "Tensor":
        return self.to(dtypes.float64)

    def half(self) -> "Tensor":
        return self.to(dtypes.float16)

    def long(self) -> "Tensor":
        return self.to(dtypes.int64)

    def int(self) -> "Tensor":
        return self.to(dtypes.int32)

    def short(self) -> "Tensor":
        return self.to(dtypes.int16)

    def char(self) -> "Tensor":
        return self.to(dtypes.int8)

    def byte(self) -> "Tensor":
        return self.to(dtypes.uint8)

    def bool(self) -> "Tensor":
        return self.to(dtypes.bool_)

    def type_as(self, other: "Tensor") -> "Tensor":
        return self.to(other.dtype)

    def type(self, dtype: Any = None, non_blocking: bool = False) -> Any:
        """Without ``dtype``, the type's name (``'tinynorm.FloatTensor'``, ``'tinynorm.cuda.FloatTensor'``);
        with one (a dtype or such a name, ``torch.`` or ``tinynorm.``), the tensor converted to it."""
        if dtype is None:
            place = "cuda." if self.device.type == "cuda" else ""
            return f"tinynorm.{place}{dtypes.type_name(self.dtype)}Tensor"
        if isinstance(dtype, str) and dtype.endswith("Tensor"):
            name = dtype.rsplit(".", 1)[-1][:-len("Tensor")]
            by_name = {value: np.dtype(key) for key, value in dtypes._TYPE_NAMES.items()}
            if name not in by_name:
                raise ValueError(f"type(): invalid type {dtype!r}")
            return self.to(by_name[name], device="cuda" if ".cuda." in dtype else "cpu")
        return self.to(dtypes.as_dtype(dtype))

    __hash__ = object.__hash__


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:  # noqa: A002  (PyTorch's argument name)
    return input.numel()


def is_floating_point(input: Tensor) -> bool:  # noqa: A002
    return input.is_floating_point()


def on_device(value: Any, device: str, op: str, what: str, where: str) -> Tensor:
    """``value`` as a tensor on ``device``: host data (numbers, lists, numpy arrays) is copied there, and
    a tensor on another device is an error naming both (``what``/``where`` say what each one is, e.g.
    ``"target is"`` and ``"input is"``)."""
    if not isinstance(value, Tensor):
        return tensor(value, device=device)
    if value.device != device:
        raise RuntimeError(f"{op}: {what} on {value.device} but {where} on {device}; move it with .to('{device}')")
    return value


def resolve_device(device: Any) -> _Device:
    """``device`` (a name, an index or a :class:`tinynorm.device`) as the device a tensor there reports,
    checking that CUDA is usable when it is asked for; None is the default device (the CPU unless
    ``set_default_device`` chose another)."""
    name = canonical_device(_Device(default_device_name() if device is None else device))
    if name == "cuda":
        _cuda.require()
    return tensor_device(name)


def tensor(data: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    """A new tensor holding a copy of ``data``: nested lists, numbers, numpy arrays, tensors, or device
    arrays with ``__cuda_array_interface__`` (CuPy arrays, PyTorch CUDA tensors).

    As in PyTorch: Python floats give the default dtype (float32), Python ints int64, arrays keep
    their dtype unless ``dtype`` is given; without ``device``, tensors and CUDA arrays stay on their
    device and everything else goes to the CPU.
    """
    if isinstance(data, Tensor) or hasattr(data, "__cuda_array_interface__"):
        source = data.detach() if isinstance(data, Tensor) else _cuda.from_cuda_array(data)
        result = source.to(dtype=dtype, device=resolve_device(device or source.device))
        if result.array is source.array:  # nothing changed: copy, so the new tensor owns its memory
            result = Tensor._from_array(result._backend.copy(result.array), result.device)
    else:
        result = _from_host(data, dtype, resolve_device(device))
    if requires_grad:
        result.requires_grad_(True)
    return result


def _legacy_values(data: tuple, device: Any) -> Tensor:
    """What ``Tensor(*data)`` holds when ``data`` is not one backend array: the values of one sequence
    or number-free sizes, in the default float dtype."""
    if all(isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_)) for n in data):
        return _from_host(np.zeros(data or (0,), dtypes.get_default_dtype()), None, resolve_device(device))
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        return _from_host(data[0], dtypes.get_default_dtype(), resolve_device(device))
    raise TypeError(f"Tensor(): expected sizes (ints) or one sequence of values, got "
                    f"({', '.join(type(d).__name__ for d in data)}); use tinynorm.tensor(data, dtype=...)")


def _from_host(data: Any, dtype: Any, device: str) -> Tensor:
    """A tensor on ``device`` from numbers, nested lists or a numpy array, with PyTorch's dtype rules."""
    from_python = not isinstance(data, np.ndarray) and not isinstance(data, np.generic)
    try:
        array = np.array(data, copy=True)
    except ValueError:  # nested lists of unequal lengths
        raise ValueError(f"tensor(): the nested sequences must be rectangular (every row of one length at each "
                         f"depth), got {str(data)[:80]}") from None
    if array.dtype == object or array.dtype.kind in "USV":
        raise TypeError(f"tensor(): cannot make a tensor from data of type {type(data).__name__} ({array.dtype})")
    if dtype is not None:
        array = array.astype(dtypes.as_dtype(dtype), copy=False)
    elif from_python and array.dtype.kind == "f":
        array = array.astype(dtypes.get_default_dtype(), copy=False)
    elif array.dtype.kind == "i":
        array = array.astype(dtypes.int64, copy=False) if from_python else array
    else:
        dtypes.as_dtype(array.dtype)
    return Tensor._from_array(get_backend(device).from_numpy(array), device)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Like :func:`tensor`, but shares memory where it can: a tensor that already has the dtype and
    device is returned as is, and a numpy array on the CPU or a CUDA array (``__cuda_array_interface__``)
    is wrapped without a copy when it needs no conversion."""
    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device)
    if hasattr(data, "__cuda_array_interface__"):
        return _cuda.from_cuda_array(data).to(dtype=dtype, device=device)
    if (isinstance(data, np.ndarray) and resolve_device(device) == "cpu"
            and (dtype is None or dtypes.as_dtype(dtype) == data.dtype)):
        from .creation import from_numpy  # creation builds on this module
        return from_numpy(data)  # shares the array's memory, as PyTorch's as_tensor does
    return tensor(data, dtype=dtype, device=device)
