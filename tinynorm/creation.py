"""Functions that make new tensors: ``zeros``, ``ones``, ``full``, ``empty``, ``arange``, ``linspace``,
``logspace``, ``eye``, ``randn``, ``rand``, the ``*_like`` variants, and ``from_numpy``."""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from . import dtypes
from .autograd import grad_mode
from .backends import get_backend
from .random import Generator, numpy_generator
from .tensor import Tensor, resolve_device

__all__ = [
    "zeros", "ones", "full", "empty", "arange", "linspace", "logspace", "eye", "randn", "rand",
    "zeros_like", "ones_like", "full_like", "empty_like", "randn_like", "rand_like", "from_numpy",
]


def _shape(size: tuple, op: str = "tensor") -> tuple[int, ...]:
    """``size`` (ints, or one tuple or list of them) as a shape, with PyTorch's errors."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for position, n in enumerate(size):
        if not isinstance(n, (int, np.integer)) or isinstance(n, (bool, np.bool_)):
            raise TypeError(f"{op}(): argument 'size' must be a tuple of ints, but found element of type "
                            f"{type(n).__name__} at pos {position}: {size!r}")
    if any(n < 0 for n in size):
        raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    return tuple(int(n) for n in size)


def _make(array: np.ndarray, requires_grad: bool, device: Any) -> Tensor:
    """A tensor on ``device`` holding host values ``array`` (copied to the device when not the CPU)."""
    device = resolve_device(device)
    result = Tensor._from_array(get_backend(device).from_numpy(array), device)
    return _requiring_grad(result, requires_grad)


def _fill(name: str, size: tuple, dtype: Any, requires_grad: bool, device: Any, *fill_value: Any) -> Tensor:
    """A tensor made by the backend's ``zeros``/``ones``/``empty``/``full`` on the device itself."""
    device = resolve_device(device)
    array = getattr(get_backend(device), name)(_shape(size, name), *fill_value, dtype=_dtype_or_default(dtype))
    result = Tensor._from_array(array, device)
    return _requiring_grad(result, requires_grad)


def _requiring_grad(result: Tensor, requires_grad: Any) -> Tensor:
    """``result``, made to require grad when ``requires_grad`` (a bool: ``'no'`` would count as true)."""
    if not isinstance(requires_grad, (bool, np.bool_)):
        raise TypeError(f"requires_grad must be a bool, got {requires_grad!r} ({type(requires_grad).__name__})")
    return result.requires_grad_(True) if requires_grad else result


def _dtype_or_default(dtype: Any) -> np.dtype:
    return dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)


def zeros(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    return _fill("zeros", size, dtype, requires_grad, device)


def ones(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    return _fill("ones", size, dtype, requires_grad, device)


def empty(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    return _fill("empty", size, dtype, requires_grad, device)


def full(size: Any, fill_value: float, dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    fill_value = _scalar(fill_value, "full", "fill_value")
    if dtype is not None and dtypes.as_dtype(dtype).kind in "iu" and not _fits(fill_value, dtypes.as_dtype(dtype)):
        raise RuntimeError(f"full: value cannot be converted to type {dtypes.as_dtype(dtype)} without overflow: "
                           f"{fill_value!r}")
    if dtype is None:
        dtype = dtypes.int64 if isinstance(fill_value, (int, np.integer)) and not isinstance(fill_value, bool) else None
    return _fill("full", (size,), dtype, requires_grad, device, fill_value)


def arange(start: float, end: float | None = None, step: float = 1, dtype: Any = None,
           requires_grad: bool = False, device: Any = None) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive); int64 when all arguments are ints, as PyTorch."""
    if end is None:
        start, end = 0, start
    start, end, step = (_scalar(value, "arange", name)
                        for value, name in ((start, "start"), (end, "end"), (step, "step")))
    _check_range(start, end, step)
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = dtypes.int64 if is_int else dtypes.get_default_dtype()
    return _make(np.arange(start, end, step, dtype=dtypes.as_dtype(dtype)), requires_grad, device)


def _check_range(start: Any, end: Any, step: Any) -> None:
    """PyTorch's checks of an ``arange``: finite bounds, a step that is not 0 and points from start to end."""
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"arange: unsupported range: {start} -> {end}")
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange: upper bound and lower bound inconsistent with step sign "
                           f"(start {start}, end {end}, step {step})")


def _fits(value: Any, dtype: np.dtype) -> bool:
    """Whether the number ``value`` is in the range of the integer ``dtype``."""
    limits = np.iinfo(dtype)
    return limits.min <= value <= limits.max  # False for NaN


def randn(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None,
          generator: Generator | None = None) -> Tensor:
    """Standard normal samples from ``generator`` (the global one by default, see ``tinynorm.manual_seed``)."""
    dtype = floating_dtype(dtype, "randn")
    rng = numpy_generator(generator, device, "randn")
    return _make(rng.standard_normal(_shape(size, "randn")).astype(dtype), requires_grad, device)


def rand(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None,
         generator: Generator | None = None) -> Tensor:
    """Uniform samples in [0, 1) from ``generator`` (the global one by default)."""
    dtype = floating_dtype(dtype, "rand")
    rng = numpy_generator(generator, device, "rand")
    return _make(rng.random(_shape(size, "rand")).astype(dtype), requires_grad, device)


def floating_dtype(dtype: Any, op: str) -> np.dtype:
    """``dtype`` (the default dtype when None), which must be floating: ``op`` draws real numbers."""
    dtype = _dtype_or_default(dtype)
    if not dtypes.is_floating(dtype):
        raise TypeError(f"{op}: dtype must be a floating-point dtype, got {dtype}")
    return dtype


def _like(fn: Any, other: Tensor, dtype: Any, requires_grad: bool, device: Any, **kwargs: Any) -> Tensor:
    _check_like(fn.__name__, other)
    device = other.device if device is None else device
    return fn(*other.shape, dtype=dtype or other.dtype, requires_grad=requires_grad, device=device, **kwargs)


def zeros_like(other: Tensor, dtype: Any = None, requires_grad: bool = False, *, device: Any = None) -> Tensor:
    return _like(zeros, other, dtype, requires_grad, device)


def ones_like(other: Tensor, dtype: Any = None, requires_grad: bool = False, *, device: Any = None) -> Tensor:
    return _like(ones, other, dtype, requires_grad, device)


def empty_like(other: Tensor, dtype: Any = None, requires_grad: bool = False, *, device: Any = None) -> Tensor:
    return _like(empty, other, dtype, requires_grad, device)


def randn_like(other: Tensor, dtype: Any = None, requires_grad: bool = False, *, device: Any = None,
               generator: Generator | None = None) -> Tensor:
    return _like(randn, other, dtype, requires_grad, device, generator=generator)


def rand_like(other: Tensor, dtype: Any = None, requires_grad: bool = False, *, device: Any = None,
              generator: Generator | None = None) -> Tensor:
    return _like(rand, other, dtype, requires_grad, device, generator=generator)


def full_like(other: Tensor, fill_value: float, dtype: Any = None, requires_grad: bool = False, *,
              device: Any = None) -> Tensor:
    _check_like("full", other)
    device = other.device if device is None else device
    return full(other.shape, fill_value, dtype=dtype or other.dtype, requires_grad=requires_grad, device=device)


def _check_like(name: str, other: Any) -> None:
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}_like(): argument 'input' must be Tensor, not {type(other).__name__}")


# ------------------------------------------------------------------ numpy, ranges, identity
def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A CPU tensor sharing ``ndarray``'s memory: a write through either one shows in the other."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    if not ndarray.dtype.isnative:
        raise ValueError(f"from_numpy: the array's byte order ({ndarray.dtype.str}) is not the machine's; "
                         "convert it first: array.astype(array.dtype.newbyteorder('='))")
    if ndarray.dtype not in dtypes.SUPPORTED:
        raise TypeError(f"from_numpy: can't convert an array of dtype {ndarray.dtype}; the supported dtypes are "
                        f"{', '.join(map(str, dtypes.SUPPORTED))}")
    if any(stride < 0 for stride in ndarray.strides):
        raise ValueError("from_numpy: at least one stride of the array is negative, which tensors do not support "
                         "(as in PyTorch); pass a copy: array.copy()")
    if not ndarray.flags.writeable:
        warnings.warn("from_numpy: the array is read-only, so writing to the tensor will raise; copy the array "
                      "or make it writable first if you need to write", UserWarning, stacklevel=2)
    return Tensor._from_array(ndarray, "cpu")


def linspace(start: Any, end: Any, steps: int, *, out: Tensor | None = None, dtype: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included (default dtype float32).

    Computed as PyTorch's CPU kernel does: the first half counts up from ``start``, the second half
    down from ``end``, in the result's dtype (float64 steps, then truncation, for integer dtypes).
    """
    steps = _count(steps, "linspace", "steps")
    dtype, device = _out_defaults(out, dtype, device, "linspace")
    values = _evenly_spaced(_scalar(start, "linspace", "start"), _scalar(end, "linspace", "end"), steps, dtype)
    return write_out(out, _make(values.astype(dtype), requires_grad, device), "linspace")


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, out: Tensor | None = None, dtype: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """``base ** linspace(start, end, steps)``, with the power taken in the result's dtype as PyTorch does."""
    steps = _count(steps, "logspace", "steps")
    dtype, device = _out_defaults(out, dtype, device, "logspace")
    exponents = _evenly_spaced(_scalar(start, "logspace", "start"), _scalar(end, "logspace", "end"), steps, dtype)
    base = _scalar(base, "logspace", "base")
    base = dtype.type(base) if dtypes.is_floating(dtype) else np.float64(int(base))
    with np.errstate(over="ignore", invalid="ignore"):
        values = np.power(base, exponents).astype(dtype)
    return write_out(out, _make(values, requires_grad, device), "logspace")


def eye(n: int, m: int | None = None, *, out: Tensor | None = None, dtype: Any = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    """An ``n x m`` matrix (``n x n`` by default) with ones on the diagonal and zeros elsewhere."""
    n = _count(n, "eye", "n")
    m = n if m is None else _count(m, "eye", "m")
    dtype, device = _out_defaults(out, dtype, device, "eye")
    return write_out(out, _make(np.eye(n, m, dtype=dtype), requires_grad, device), "eye")


def _evenly_spaced(start: Any, end: Any, steps: int, dtype: np.dtype) -> np.ndarray:
    """PyTorch's linspace values before the final cast: in ``dtype`` for floats, float64 for integers."""
    if dtype == dtypes.bool_:
        raise TypeError("linspace/logspace: dtype bool is not supported; use a numeric dtype")
    if dtypes.is_floating(dtype):
        compute, start, end = dtype.type, dtype.type(start), dtype.type(end)
    else:
        compute, start, end = np.float64, np.float64(int(start)), np.float64(int(end))  # int(): C++'s truncation
    if steps == 1:
        return np.full(1, start, dtype=compute)
    index = np.arange(steps)
    with np.errstate(over="ignore", invalid="ignore"):
        step = (end - start) / compute(steps - 1)
        rising = start + step * index.astype(compute)
        falling = end - step * (steps - 1 - index).astype(compute)
    return np.where(index < steps // 2, rising, falling)


def _count(value: Any, op: str, name: str) -> int:
    """``value`` as a non-negative int: a size or a number of steps."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise RuntimeError(f"{op}: {name} must be greater or equal to 0, got {value}")
    return int(value)


def _scalar(value: Any, op: str, name: str) -> Any:
    """A real number given as a Python/numpy number or a one-element tensor."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(f"{op}: {name} must be a number or a 0-dimensional tensor, got shape {tuple(value.array.shape)}")
        value = value.item()
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: {name} must be a real number, got {type(value).__name__} ({value!r})")
    return value


def _out_defaults(out: Tensor | None, dtype: Any, device: Any, op: str,
                  default_dtype: np.dtype | None = None) -> tuple[np.dtype, str]:
    """The dtype and device of a new result: as given, else ``out``'s, else the defaults (the default
    floating dtype unless ``default_dtype`` is given)."""
    if out is None:
        dtype = default_dtype if dtype is None else dtype
        return _dtype_or_default(dtype), resolve_device(device)
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}: out must be a Tensor, got {type(out).__name__}")
    if dtype is not None and dtypes.as_dtype(dtype) != out.dtype:
        raise RuntimeError(f"{op}: dtype {dtypes.as_dtype(dtype)} does not match the dtype of out ({out.dtype})")
    if device is not None and resolve_device(device) != out.device:
        raise RuntimeError(f"{op}: device {device!r} does not match the device of out ({out.device})")
    return out.dtype, out.device


def write_out(out: Tensor | None, result: Tensor, op: str) -> Tensor:
    """``result``, or ``out`` holding its values (PyTorch's ``out=``): ``out`` must not require grad and
    must have the result's shape, or no elements (it then takes the result's shape)."""
    if out is None:
        return result
    if (out.requires_grad or result.requires_grad) and grad_mode.is_grad_enabled():
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad")
    if out.shape == result.shape:
        out.copy_(result)
    elif out.numel() == 0:
        out.data = result
    else:
        raise RuntimeError(f"{op}: out has shape {tuple(out.array.shape)} but the result has shape {tuple(result.array.shape)}; pass an out "
                           "of that shape or an empty one")
    return out
