"""``gradcheck``: compare autograd's gradients with float64 central finite differences.

The check contracts the outputs with a *random* upstream gradient v and compares d<v, f(x)>/dx from
``backward`` with (<v, f(x + eps e_i)> - <v, f(x - eps e_i)>) / (2 eps) for every input element. A random
v matters: with v = 1 (``out.sum()``) a mean-centred output such as a normalization layer's has a
gradient of ~0 everywhere, and a wrong backward would pass unnoticed.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..tensor import Tensor
from .grad_mode import no_grad


class GradcheckError(RuntimeError):
    """Raised when an analytic gradient disagrees with its finite-difference estimate."""


def _as_tuple(value: Any) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def _contract(outputs: tuple, upstream: list[np.ndarray]) -> float:
    return float(sum(np.sum(out.numpy().astype(np.float64) * v) for out, v in zip(outputs, upstream)))


def gradcheck(
    fn: Callable[..., Any],
    inputs: Any,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    seed: int = 0,
    raise_exception: bool = True,
) -> bool:
    """Check ``fn``'s gradients w.r.t. every input that requires grad; True when all agree.

    ``inputs`` is a tensor or a tuple of tensors (and other arguments passed through); the checked
    ones must be float64. On a mismatch, raises :class:`GradcheckError` naming the input, the element
    and both values (or returns False with ``raise_exception=False``).
    """
    inputs = _as_tuple(inputs)
    checked = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input requires grad; create the inputs with requires_grad=True")
    for i in checked:
        if inputs[i].dtype != np.float64:
            raise TypeError(
                f"gradcheck: input {i} has dtype {inputs[i].dtype}; finite differences need float64 "
                f"inputs (use .double())"
            )
    outputs = _as_tuple(fn(*inputs))
    rng = np.random.default_rng(seed)
    upstream = [rng.standard_normal(out.shape) for out in outputs]

    for i in checked:
        inputs[i].grad = None
    differentiable = [(out, v) for out, v in zip(outputs, upstream) if out.requires_grad]
    for k, (out, v) in enumerate(differentiable):
        out.backward(Tensor._from_array(v.astype(out.dtype), out.device), retain_graph=k + 1 < len(differentiable))

    for i in checked:
        x = inputs[i]
        analytic = np.zeros(x.shape) if x.grad is None else x.grad.numpy().astype(np.float64)
        values = x.numpy()  # shares memory with the tensor: perturb in place, then restore
        with no_grad():
            for index in np.ndindex(*x.shape):
                original = values[index]
                values[index] = original + eps
                plus = _contract(_as_tuple(fn(*inputs)), upstream)
                values[index] = original - eps
                minus = _contract(_as_tuple(fn(*inputs)), upstream)
                values[index] = original
                numeric = (plus - minus) / (2 * eps)
                if not abs(analytic[index] - numeric) <= atol + rtol * abs(numeric):
                    if not raise_exception:
                        return False
                    raise GradcheckError(
                        f"gradcheck: gradient of input {i} (shape {tuple(x.shape)}) at index {index}: "
                        f"analytic {analytic[index]:.8g}, numeric {numeric:.8g} "
                        f"(atol={atol}, rtol={rtol})"
                    )
    return True
