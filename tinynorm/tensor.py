"""``Tensor``: an array on a device, plus what autograd needs to differentiate through it.

A tensor holds its values in ``data`` (a numpy array on the CPU, a device array on the GPU). If it
``requires_grad``, operations on it are recorded: a tensor computed by an op keeps that op's node in
``grad_fn``, and ``backward()`` walks those nodes back to the leaves (tensors created by the user,
such as parameters), adding gradients into their ``.grad``. The math of every op lives in
``tinynorm.ops``; the methods here are thin, PyTorch-named doorways to it.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any, Callable

import numpy as np

from . import dtypes
from .backends import canonical_device, get_backend

Shape = tuple[int, ...]
MinMax = namedtuple("MinMax", ["values", "indices"])


class Tensor:
    """A multi-dimensional array with reverse-mode autograd. Create one with ``tinynorm.tensor``."""

    __slots__ = ("array", "requires_grad", "grad", "grad_fn", "device", "_accumulator", "__weakref__")
    __array_priority__ = 1000  # numpy defers to Tensor's operators: ndarray * Tensor -> Tensor

    def __init__(self, data: Any, requires_grad: bool = False, device: str = "cpu") -> None:
        self.array = data
        self.device = device
        self.grad: Tensor | None = None
        self.grad_fn = None
        self._accumulator = None
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _from_array(cls, data: Any, device: str = "cpu") -> "Tensor":
        """Wrap a backend array without checks or copies (the fast path used by ops)."""
        tensor = object.__new__(Tensor)
        tensor.array = data
        tensor.device = device
        tensor.grad = None
        tensor.grad_fn = None
        tensor._accumulator = None
        tensor.requires_grad = False
        return tensor

    # ----------------------------------------------------------------------------- attributes
    @property
    def _backend(self) -> Any:
        return get_backend(self.device)

    @property
    def shape(self) -> Shape:
        return self.array.shape

    @property
    def ndim(self) -> int:
        return self.array.ndim

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def T(self) -> "Tensor":
        return _ops.permute(self, tuple(reversed(range(self.ndim))))

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self.shape[dim]

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        return int(self.array.size)

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

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
            raise ValueError(f"item(): only a one-element tensor can be converted, got shape {self.shape}")
        return self.numpy().reshape(()).item()

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise ValueError(
                f"the truth value of a tensor with {self.numel()} elements is ambiguous; use .any() or .all()"
            )
        return bool(self.item())

    def __repr__(self) -> str:
        body = np.array2string(self.numpy(), separator=", ", prefix="tensor(", precision=4)
        extras = []
        if self.dtype not in (dtypes.get_default_dtype(), dtypes.int64, dtypes.bool_):
            extras.append(f"dtype={self.dtype}")
        if self.device != "cpu":
            extras.append(f"device='{self.device}'")
        if self.grad_fn is not None:
            extras.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + ", ".join([body] + extras) + ")"

    # ------------------------------------------------------------------------------ autograd
    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Mark a leaf tensor as a variable whose gradient ``backward()`` should compute."""
        if requires_grad and not dtypes.is_floating(self.dtype):
            raise TypeError(
                f"only floating-point tensors can require gradients, got dtype {self.dtype}; "
                f"convert first, e.g. x.float()"
            )
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError("requires_grad_(False) on a non-leaf tensor: use .detach() instead")
        self.requires_grad = bool(requires_grad)
        return self

    def backward(self, gradient: Any = None, retain_graph: bool = False) -> None:
        """Add d(self)/d(leaf) into the ``.grad`` of every leaf that requires grad.

        ``gradient`` is the upstream gradient (same shape as ``self``); it may be omitted for a
        one-element tensor such as a loss.
        """
        _engine.backward(self, gradient, retain_graph)

    def detach(self) -> "Tensor":
        """The same values (shared memory), cut from the graph."""
        return Tensor._from_array(self.array, self.device)

    @property
    def data(self) -> "Tensor":
        """The values as a tensor that shares this one's memory, cut from the graph
        (``requires_grad=False``); writes through it are not seen by autograd."""
        return Tensor._from_array(self.array, self.device)

    @data.setter
    def data(self, value: "Tensor") -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data: expected a Tensor, got {type(value).__name__}")
        self.array, self.device = value.array, value.device

    def register_hook(self, hook: Callable[["Tensor"], "Tensor | None"]) -> Callable[[], None]:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces it.

        Returns a function that removes the hook.
        """
        if not self.requires_grad:
            raise RuntimeError("register_hook: cannot register a hook on a tensor that does not require grad")
        node = _function._node_of(self)
        node.hooks.append(hook)
        return lambda: node.hooks.remove(hook)

    def retain_grad(self) -> None:
        """Keep the gradient of this non-leaf tensor in ``.grad`` after backward (as PyTorch)."""
        if self.grad_fn is None:
            return

        def store(grad: Tensor) -> None:
            self.grad = grad if self.grad is None else Tensor._from_array(self.grad.array + grad.array, self.device)

        self.register_hook(store)

    # ----------------------------------------------------------------------- dtype and device
    def to(self, *args: Any, dtype: Any = None, device: Any = None) -> "Tensor":
        """``to(dtype)``, ``to(device)`` or both; returns ``self`` when nothing changes."""
        for arg in args:
            if isinstance(arg, str):
                device = arg
            else:
                dtype = arg
        result = self
        if dtype is not None and dtypes.as_dtype(dtype) != self.dtype:
            result = _ops.cast(result, dtypes.as_dtype(dtype))
        if device is not None and canonical_device(device) != self.device:
            result = _ops.to_device(result, resolve_device(device))
        return result

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def cuda(self) -> "Tensor":
        return self.to("cuda")

    def float(self) -> "Tensor":
        return self.to(dtypes.float32)

    def double(self) -> "Tensor":
        return self.to(dtypes.float64)

    def half(self) -> "Tensor":
        return self.to(dtypes.float16)

    def long(self) -> "Tensor":
        return self.to(dtypes.int64)

    def type_as(self, other: "Tensor") -> "Tensor":
        return self.to(other.dtype)

    # ---------------------------------------------------------------- in place (no autograd)
    def zero_(self) -> "Tensor":
        self.array[...] = 0
        return self

    def fill_(self, value: float) -> "Tensor":
        self.array[...] = value
        return self

    def copy_(self, source: Any) -> "Tensor":
        """Copy values into this tensor's storage (casting to its dtype), from a tensor on any device
        or from host data; not recorded by autograd."""
        if isinstance(source, Tensor):
            values = source.array if source.device == self.device else source.detach().to(self.device).array
        elif self.device == "cpu":
            values = source
        else:
            values = self._backend.from_numpy(np.asarray(source, dtype=self.dtype))
        if tuple(np.shape(values)) != self.shape:
            raise ValueError(f"copy_: source has shape {tuple(np.shape(values))}, expected {self.shape}")
        self.array[...] = values
        return self

    # ------------------------------------------------------------------------------ operators
    def __add__(self, other: Any) -> "Tensor":
        return _ops.add(self, other)

    def __radd__(self, other: Any) -> "Tensor":
        return _ops.add(other, self)

    def __sub__(self, other: Any) -> "Tensor":
        return _ops.sub(self, other)

    def __rsub__(self, other: Any) -> "Tensor":
        return _ops.sub(other, self)

    def __mul__(self, other: Any) -> "Tensor":
        return _ops.mul(self, other)

    def __rmul__(self, other: Any) -> "Tensor":
        return _ops.mul(other, self)

    def __truediv__(self, other: Any) -> "Tensor":
        return _ops.div(self, other)

    def __rtruediv__(self, other: Any) -> "Tensor":
        return _ops.div(other, self)

    def __pow__(self, exponent: Any) -> "Tensor":
        return _ops.pow(self, exponent)

    def __rpow__(self, base: Any) -> "Tensor":
        return _ops.pow(base, self)

    def __neg__(self) -> "Tensor":
        return _ops.neg(self)

    def __matmul__(self, other: Any) -> "Tensor":
        return _ops.matmul(self, other)

    def __rmatmul__(self, other: Any) -> "Tensor":
        return _ops.matmul(other, self)

    def __getitem__(self, index: Any) -> "Tensor":
        return _ops.getitem(self, index)

    def __lt__(self, other: Any) -> "Tensor":
        return _ops.compare("less", self, other)

    def __le__(self, other: Any) -> "Tensor":
        return _ops.compare("less_equal", self, other)

    def __gt__(self, other: Any) -> "Tensor":
        return _ops.compare("greater", self, other)

    def __ge__(self, other: Any) -> "Tensor":
        return _ops.compare("greater_equal", self, other)

    def __eq__(self, other: Any) -> "Tensor":  # type: ignore[override]
        return _ops.compare("equal", self, other)

    def __ne__(self, other: Any) -> "Tensor":  # type: ignore[override]
        return _ops.compare("not_equal", self, other)

    __hash__ = object.__hash__

    # --------------------------------------------------------------------- methods -> ops
    def exp(self) -> "Tensor":
        return _ops.exp(self)

    def log(self) -> "Tensor":
        return _ops.log(self)

    def sqrt(self) -> "Tensor":
        return _ops.sqrt(self)

    def rsqrt(self) -> "Tensor":
        return _ops.rsqrt(self)

    def abs(self) -> "Tensor":
        return _ops.abs(self)

    def tanh(self) -> "Tensor":
        return _ops.tanh(self)

    def sigmoid(self) -> "Tensor":
        return _ops.sigmoid(self)

    def relu(self) -> "Tensor":
        return _ops.relu(self)

    def clamp(self, min: float | None = None, max: float | None = None) -> "Tensor":  # noqa: A002
        return _ops.clamp(self, min, max)

    def pow(self, exponent: Any) -> "Tensor":
        return _ops.pow(self, exponent)

    def matmul(self, other: Any) -> "Tensor":
        return _ops.matmul(self, other)

    def sum(self, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> "Tensor":
        return _ops.sum(self, dim, keepdim, **numpy_names)

    def mean(self, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> "Tensor":
        return _ops.mean(self, dim, keepdim, **numpy_names)

    def var(self, dim: Any = None, keepdim: bool = False, *, correction: int = 1, **numpy_names: Any) -> "Tensor":
        return _ops.var(self, dim, keepdim, correction=correction, **numpy_names)

    def std(self, dim: Any = None, keepdim: bool = False, *, correction: int = 1, **numpy_names: Any) -> "Tensor":
        return _ops.std(self, dim, keepdim, correction=correction, **numpy_names)

    def amax(self, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> "Tensor":
        return _ops.amax(self, dim, keepdim, **numpy_names)

    def amin(self, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> "Tensor":
        return _ops.amin(self, dim, keepdim, **numpy_names)

    def max(self, dim: int | None = None, keepdim: bool = False) -> Any:
        return _ops.max(self, dim, keepdim)

    def min(self, dim: int | None = None, keepdim: bool = False) -> Any:
        return _ops.min(self, dim, keepdim)

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> "Tensor":
        return _ops.argmax(self, dim, keepdim)

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> "Tensor":
        return _ops.argmin(self, dim, keepdim)

    def any(self) -> bool:
        return bool(self.numpy().any())

    def all(self) -> bool:
        return bool(self.numpy().all())

    def softmax(self, dim: int) -> "Tensor":
        return _ops.softmax(self, dim)

    def log_softmax(self, dim: int) -> "Tensor":
        return _ops.log_softmax(self, dim)

    def reshape(self, *shape: Any) -> "Tensor":
        return _ops.reshape(self, _shape_args(shape))

    def view(self, *shape: Any) -> "Tensor":
        """Same as :meth:`reshape` (tinynorm tensors have no view/copy distinction to track)."""
        return _ops.reshape(self, _shape_args(shape))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> "Tensor":
        return _ops.flatten(self, start_dim, end_dim)

    def transpose(self, dim0: int, dim1: int) -> "Tensor":
        return _ops.transpose(self, dim0, dim1)

    def permute(self, *dims: Any) -> "Tensor":
        return _ops.permute(self, _shape_args(dims))

    def unsqueeze(self, dim: int) -> "Tensor":
        return _ops.unsqueeze(self, dim)

    def squeeze(self, dim: int | None = None) -> "Tensor":
        return _ops.squeeze(self, dim)

    def expand(self, *shape: Any) -> "Tensor":
        return _ops.expand(self, _shape_args(shape))

    def contiguous(self) -> "Tensor":
        return self

    def clone(self) -> "Tensor":
        return _ops.clone(self)


def _shape_args(args: tuple) -> tuple:
    """Accept both ``x.reshape(2, 3)`` and ``x.reshape((2, 3))``."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def on_device(value: Any, device: str, op: str, what: str, where: str) -> Tensor:
    """``value`` as a tensor on ``device``: host data (numbers, lists, numpy arrays) is copied there, and
    a tensor on another device is an error naming both (``what``/``where`` say what each one is, e.g.
    ``"target is"`` and ``"input is"``)."""
    if not isinstance(value, Tensor):
        return tensor(value, device=device)
    if value.device != device:
        raise RuntimeError(f"{op}: {what} on {value.device} but {where} on {device}; move it with .to('{device}')")
    return value


def resolve_device(device: Any) -> str:
    """``device`` as tinynorm's device name, checking that CUDA is usable when it is asked for."""
    name = canonical_device(device)
    if name == "cuda":
        _cuda.require()
    return name


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
        result = _from_host(data, dtype, resolve_device(device or "cpu"))
    if requires_grad:
        result.requires_grad_(True)
    return result


def _from_host(data: Any, dtype: Any, device: str) -> Tensor:
    """A tensor on ``device`` from numbers, nested lists or a numpy array, with PyTorch's dtype rules."""
    from_python = not isinstance(data, np.ndarray) and not isinstance(data, np.generic)
    array = np.array(data, copy=True)
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
    if (isinstance(data, np.ndarray) and canonical_device(device or "cpu") == "cpu"
            and (dtype is None or dtypes.as_dtype(dtype) == data.dtype)):
        from .creation import from_numpy  # creation builds on this module
        return from_numpy(data)  # shares the array's memory, as PyTorch's as_tensor does
    return tensor(data, dtype=dtype, device=device or "cpu")


from . import ops as _ops  # noqa: E402  (ops build on Tensor)
from .autograd import engine as _engine  # noqa: E402
from .autograd import function as _function  # noqa: E402
from . import cuda as _cuda  # noqa: E402  (imports numba.cuda only when first used)
