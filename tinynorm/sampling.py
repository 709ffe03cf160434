"""Random sampling: ``randint``, ``randint_like``, ``randperm``, ``normal``, ``bernoulli``, ``multinomial``.

Each function draws from ``generator=`` (a :class:`tinynorm.Generator`) or from the global generator
(``tinynorm.manual_seed``), on the host, and puts the result on the requested device. Signatures,
defaults, dtypes and shapes are PyTorch's; the numbers differ (see :mod:`tinynorm.random`).

A sample drawn from parameters that require grad (``normal(mean, std)``, ``bernoulli(p)``) requires
grad too, with a zero gradient, as in PyTorch: a sample is not a differentiable function of its
parameters (write ``mean + std * tinynorm.randn_like(std)`` for the reparameterized one).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .autograd.function import Context, Function
from .creation import _make, _out_defaults, _shape, floating_dtype, write_out
from .random import Generator, numpy_generator
from .tensor import Tensor

__all__ = ["randint", "randint_like", "randperm", "normal", "bernoulli", "multinomial"]


class Sampled(Function):
    """Values drawn from distributions with the given tensor parameters; their gradient is zero."""

    @staticmethod
    def forward(ctx: Context, values: Any, *parameters: Any) -> Any:
        return values

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        zeros = ctx.xp.zeros_like(grad)
        return (None, *(zeros if need else None for need in ctx.needs_input_grad[1:]))


def _sampled(values: np.ndarray, parameters: list[Tensor]) -> Tensor:
    """``values`` on the parameters' device, recorded as a sample of them for autograd."""
    device = parameters[0].device
    return Sampled.apply(_make(values, False, device).array, *parameters)


# ------------------------------------------------------------------------------- integers
def randint(*args: Any, size: Any = None, low: int | None = None, high: int | None = None,
            generator: Generator | None = None, out: Tensor | None = None, dtype: Any = None, device: Any = None,
            requires_grad: bool = False) -> Tensor:
    """Integers drawn uniformly from ``[low, high)``: ``randint(high, size)`` or ``randint(low, high, size)``
    (int64 unless ``dtype`` says otherwise)."""
    low, high, size = _randint_arguments(args, low, high, size)
    dtype, device = _out_defaults(out, dtype, device, "randint", dtypes.int64)
    return write_out(out, _uniform_integers(low, high, _shape((size,)), dtype, device, requires_grad, generator,
                                            "randint"), "randint")


def randint_like(input: Tensor, low: int = 0, high: int | None = None, *, generator: Generator | None = None,
                 dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """``randint`` with ``input``'s shape, dtype and device: ``randint_like(x, high)`` or ``(x, low, high)``."""
    _check_tensor(input, "randint_like")
    if high is None:
        low, high = 0, low
    dtype = input.dtype if dtype is None else dtypes.as_dtype(dtype)
    device = input.device if device is None else device
    return _uniform_integers(_integer(low, "randint_like", "low"), _integer(high, "randint_like", "high"), input.shape,
                             dtype, device, requires_grad, generator, "randint_like")


def randperm(n: int, *, generator: Generator | None = None, out: Tensor | None = None, dtype: Any = None,
             device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A random permutation of ``0 .. n - 1`` (int64 unless ``dtype`` says otherwise)."""
    n = _integer(n, "randperm", "n")
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    dtype, device = _out_defaults(out, dtype, device, "randperm", dtypes.int64)
    _check_range(0, n, dtype, "randperm")
    values = numpy_generator(generator, device, "randperm").permutation(n).astype(dtype)
    return write_out(out, _make(values, requires_grad, device), "randperm")


def _randint_arguments(args: tuple, low: Any, high: Any, size: Any) -> tuple[int, int, Any]:
    """PyTorch's overloads ``(high, size)`` and ``(low, high, size)``, positional or by keyword."""
    positional = list(args)
    if size is None and positional and isinstance(positional[-1], (tuple, list)):
        size = positional.pop()
    if high is None and positional:
        high = positional.pop()
    if low is None and positional:
        low = positional.pop()
    if positional or high is None or size is None:
        raise TypeError(f"randint: expected (high, size) or (low, high, size) with size a tuple of ints, got {args!r}")
    low = 0 if low is None else low
    return _integer(low, "randint", "low"), _integer(high, "randint", "high"), size


def _uniform_integers(low: int, high: int, shape: tuple[int, ...], dtype: np.dtype, device: Any,
                      requires_grad: bool, generator: Generator | None, op: str) -> Tensor:
    _check_range(low, high, dtype, op)
    rng = numpy_generator(generator, device, op)
    values = rng.integers(low, high - 1, size=shape, dtype=np.int64, endpoint=True).astype(dtype)
    return _make(values, requires_grad, device)


def _check_range(low: int, high: int, dtype: np.dtype, op: str) -> None:
    """``[low, high)`` must be non-empty and every value in it exact in ``dtype``."""
    if high <= low:
        raise RuntimeError(f"{op}: expected low < high, but got low={low} >= high={high}")
    if dtypes.is_floating(dtype):
        smallest, largest = -2 ** (np.finfo(dtype).nmant + 1), 2 ** (np.finfo(dtype).nmant + 1)
    else:
        smallest, largest = (0, 1) if dtype == dtypes.bool_ else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
    if low < smallest or high - 1 > largest:
        raise RuntimeError(f"{op}: the values [{low}, {high}) do not fit {dtype}, which holds [{smallest}, {largest}]")


def _integer(value: Any, op: str, name: str) -> int:
    if isinstance(value, Tensor) and value.numel() == 1 and not dtypes.is_floating(value.dtype):
        value = value.item()
    if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be an int, got {type(value).__name__}")
    return int(value)


# --------------------------------------------------------------------------- distributions
def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Generator | None = None,
           out: Tensor | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Samples from normal distributions, with PyTorch's four overloads:

    * ``normal(mean, std)`` with two tensors: one sample per element of their broadcast shape;
    * ``normal(mean_tensor, std=1.0)`` or ``normal(mean, std_tensor)``: the tensor's shape;
    * ``normal(mean, std, size)`` with two numbers: a new tensor (``dtype``, ``device``, ``requires_grad``).
    """
    parameters = [value for value in (mean, std) if isinstance(value, Tensor)]
    if not parameters:
        if size is None:
            raise TypeError("normal: with numbers for both mean and std, pass the size: normal(mean, std, size)")
        mean, std = _real(mean, "normal", "mean"), _real(std, "normal", "std")
        _check_std(std)
        dtype, device = _out_defaults(out, dtype, device, "normal")
        dtype = floating_dtype(dtype, "normal")
        z = numpy_generator(generator, device, "normal").standard_normal(_shape((size,)))
        return write_out(out, _make((mean + std * z).astype(dtype), requires_grad, device), "normal")
    if size is not None or dtype is not None or device is not None or requires_grad:
        raise TypeError("normal: size, dtype, device and requires_grad are only for normal(mean, std, size) with "
                        "numbers; with a tensor mean or std the result takes its shape, dtype and device")
    for name, value in (("mean", mean), ("std", std)):
        if isinstance(value, Tensor) and not dtypes.is_floating(value.dtype):
            raise TypeError(f"normal: {name} must be a floating-point tensor, got dtype {value.dtype}")
    mean_values, std_values = (_host_values(value, name) for name, value in (("mean", mean), ("std", std)))
    _check_std(std_values)
    try:
        shape = np.broadcast_shapes(*(p.shape for p in parameters))
    except ValueError:
        raise RuntimeError(f"normal: the shapes of mean {tuple(mean.shape)} and std {tuple(std.shape)} do not "
                           "broadcast") from None
    result_dtype = np.result_type(*(p.dtype for p in parameters))
    z = numpy_generator(generator, parameters[0].device, "normal").standard_normal(shape)
    values = (mean_values + std_values * z).astype(result_dtype)
    return write_out(out, _sampled(values, parameters), "normal")


def bernoulli(input: Tensor, p: float | None = None, *, generator: Generator | None = None,
              out: Tensor | None = None) -> Tensor:
    """Ones with probability ``input`` (elementwise), zeros otherwise, in ``input``'s dtype; with ``p``,
    every element is one with probability ``p``."""
    _check_tensor(input, "bernoulli")
    if not dtypes.is_floating(input.dtype):
        raise TypeError(f"bernoulli: input must be a floating-point tensor of probabilities, got dtype {input.dtype}")
    probability = input.numpy() if p is None else _real(p, "bernoulli", "p")
    if not np.all((probability >= 0) & (probability <= 1)):
        where = "input" if p is None else f"p={p}"
        raise RuntimeError(f"bernoulli: every probability must be in [0, 1], but {where} has values outside")
    draws = numpy_generator(generator, input.device, "bernoulli").random(input.shape)
    return write_out(out, _sampled((draws < probability).astype(input.dtype), [input]), "bernoulli")


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator: Generator | None = None,
                out: Tensor | None = None) -> Tensor:
    """Category indices (int64) drawn from each row of ``input``'s non-negative weights (1-D: one
    distribution, 2-D: one per row). Without replacement a category is drawn at most once per row,
    and categories of weight zero come last, in index order, once the others are exhausted."""
    _check_tensor(input, "multinomial")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: input must be 1- or 2-dimensional, got shape {input.shape}")
    if not dtypes.is_floating(input.dtype):
        raise TypeError(f"multinomial: input must be a floating-point tensor of weights, got dtype {input.dtype}")
    num_samples = _integer(num_samples, "multinomial", "num_samples")
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: num_samples must be positive, got {num_samples}")
    categories = input.shape[-1]
    if categories == 0:
        raise RuntimeError("multinomial: input has no categories (its last dimension is 0)")
    weights = input.numpy().astype(np.float64).reshape(-1, categories)
    if not np.all(np.isfinite(weights) & (weights >= 0)):
        raise RuntimeError("multinomial: the weights contain inf, nan or a negative value")
    if np.any(weights.sum(axis=1) <= 0):
        raise RuntimeError("multinomial: a row of weights sums to 0; it is not a distribution")
    if not replacement and num_samples > categories:
        raise RuntimeError(f"multinomial: cannot draw {num_samples} samples without replacement from "
                           f"{categories} categories")
    rng = numpy_generator(generator, input.device, "multinomial")
    samples = _draw_categories(weights, num_samples, replacement, rng)
    samples = samples.reshape(input.shape[:-1] + (num_samples,))
    return write_out(out, _make(samples, False, input.device), "multinomial")


def _draw_categories(weights: np.ndarray, num_samples: int, replacement: bool, rng: np.random.Generator) -> np.ndarray:
    """``num_samples`` category indices per row of ``weights`` (rows, categories)."""
    if replacement:  # inverse transform: the first category whose cumulative weight exceeds a uniform draw
        cumulative = np.cumsum(weights, axis=1)
        draws = rng.random((len(weights), num_samples)) * cumulative[:, -1:]
        samples = np.stack([np.searchsorted(row, u, side="right") for row, u in zip(cumulative, draws)])
        return np.minimum(samples, weights.shape[1] - 1).astype(np.int64)
    # Without replacement: the categories with the smallest Exp(1) / weight keys, in key order, are
    # distributed as drawing one category at a time and removing it (Efraimidis and Spirakis, 2006).
    with np.errstate(divide="ignore"):
        keys = rng.standard_exponential(weights.shape) / weights
    return np.argsort(keys, axis=1, kind="stable")[:, :num_samples].astype(np.int64)


# --------------------------------------------------------------------------------- helpers
def _check_tensor(value: Any, op: str) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(value).__name__}")


def _real(value: Any, op: str, name: str) -> float:
    if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be a number or a floating-point tensor, got {type(value).__name__}")
    return float(value)


def _host_values(value: Any, name: str) -> Any:
    return value.numpy().astype(np.float64) if isinstance(value, Tensor) else _real(value, "normal", name)


def _check_std(std: Any) -> None:
    std = np.asarray(std)
    if not np.all(std >= 0):
        raise RuntimeError(f"normal: std must be >= 0, got {std[~(std >= 0)].reshape(-1)[0]}")
