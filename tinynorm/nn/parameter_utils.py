"""Operations on a model's parameters taken together: clip their gradients (by total norm or by
value), and flatten them into one vector and back. PyTorch's ``torch.nn.utils`` functions of the same
names and semantics; exported as ``tinynorm.nn.utils.clip_grad_norm_`` and so on.

Gradients are scaled or clipped by giving each ``p.grad`` a new array rather than writing into the
old one: the autograd engine may have handed one gradient array to several parameters (``a + b``
gives both the same upstream gradient), and each must be scaled once. A tensor held as ``g = p.grad``
still sees the result, since it is the same ``Tensor`` object.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Iterable

import numpy as np

from .. import dtypes
from ..autograd import no_grad
from ..ops import cat
from ..tensor import Tensor

TensorOrTensors = Tensor | Iterable[Tensor]


def get_total_norm(tensors: TensorOrTensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """The ``norm_type``-norm of all the ``tensors`` taken as one vector (the norm of their norms), as a
    0-d tensor on the first tensor's device. ``norm_type`` may be ``inf``, ``-inf``, 0 (the count of
    non-zeros) or any real number; ``foreach`` is accepted and changes nothing.

    Sums are accumulated in float64, so float32 values far beyond 1e19 (whose squares overflow) still
    give a finite norm; the result has the tensors' dtype. With ``error_if_nonfinite``, a NaN or
    infinite norm is a ``RuntimeError``.
    """
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = _as_float("norm_type", norm_type)
    _check_foreach(foreach)
    if not tensors:
        return Tensor._from_array(np.array(0.0, dtype=dtypes.get_default_dtype()))
    for index, tensor in enumerate(tensors):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"get_total_norm: tensors[{index}] must be a Tensor, got {type(tensor).__name__}")
    device = tensors[0].device
    dtype = np.result_type(*(t.dtype for t in tensors))
    with no_grad():
        norms = [_vector_norm(t._backend, t.array, norm_type) for t in tensors]
        norms_here = [Tensor._from_array(n, t.device).to(device).array for n, t in zip(norms, tensors)]
        backend = tensors[0]._backend
        total = _vector_norm(backend, backend.stack(norms_here), norm_type).astype(dtype)
    if error_if_nonfinite and not math.isfinite(float(total)):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be "
            "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`")
    return Tensor._from_array(total, device)


def clip_grads_with_norm_(parameters: TensorOrTensors, max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Scale the gradients of ``parameters`` by ``min(1, max_norm / (total_norm + 1e-6))``, computed
    on the device (no transfer to the host), as PyTorch does."""
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    max_norm = _as_float("max_norm", max_norm)
    if not max_norm >= 0:
        raise ValueError(f"max_norm must be >= 0, got {max_norm} (a negative one would flip every gradient)")
    if not isinstance(total_norm, Tensor):
        raise TypeError(f"total_norm must be a Tensor (from get_total_norm), got {type(total_norm).__name__}")
    _check_foreach(foreach)
    grads = _gradients(parameters)
    if not grads:
        return
    xp = total_norm._backend
    with no_grad():
        coefficient = Tensor._from_array(xp.as_array(xp.minimum(max_norm / (total_norm.array + 1e-6), 1.0)),
                                         total_norm.device)
        for grad in grads:
            scale = coefficient.to(grad.device).array.astype(grad.dtype)
            grad.array = grad._backend.as_array(grad.array * scale)


def clip_grad_norm_(parameters: TensorOrTensors, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Scale the gradients of ``parameters`` (tensors, or one tensor) so that their total
    ``norm_type``-norm is at most ``max_norm``; returns the total norm before clipping, a 0-d tensor.

    Typical use, between ``backward()`` and ``optimizer.step()``:
    ``nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)``.
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        from_generator = not isinstance(parameters, (list, tuple))
        parameters = list(parameters)
        if from_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2)
    total_norm = get_total_norm(_gradients(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters: TensorOrTensors, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Deprecated (as in PyTorch): :func:`clip_grad_norm_`."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: TensorOrTensors, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient of ``parameters`` to ``[-clip_value, clip_value]``."""
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    clip_value = _as_float("clip_value", clip_value)
    if not clip_value >= 0:
        raise ValueError(f"clip_value must be >= 0, got {clip_value} (a negative one would set every gradient to it)")
    _check_foreach(foreach)
    for grad in _gradients(parameters):
        grad.array = grad._backend.as_array(grad._backend.clip(grad.array, -clip_value, clip_value))


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All ``parameters`` flattened and concatenated into one vector (differentiable: gradients flow
    back to the parameters)."""
    parameters = list(parameters)
    _check_same_device(parameters)
    if not parameters:
        raise ValueError("parameters_to_vector: expected at least one parameter, got none")
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Give each of ``parameters`` its slice of ``vec``, in order, as its data: afterwards the
    parameters share ``vec``'s memory (as in PyTorch). ``vec`` must have exactly as many elements as
    the parameters together."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected a Tensor, but got: {type(vec).__name__}")
    parameters = list(parameters)
    _check_same_device(parameters)
    needed = sum(p.numel() for p in parameters)
    if vec.ndim != 1 or vec.numel() != needed:
        raise ValueError(f"vector_to_parameters: vec must be a vector of {needed} elements (the parameters' total), "
                         f"got shape {tuple(vec.shape)}")
    values, start = vec.detach(), 0
    with no_grad():
        for param in parameters:
            size = param.numel()
            param.data = values[start:start + size].reshape(param.shape)
            start += size


def _vector_norm(xp: Any, array: Any, norm_type: float) -> Any:
    """The ``norm_type``-norm of all elements of ``array``: a 0-d float64 array (float64 sums)."""
    if array.size == 0 and norm_type in (math.inf, -math.inf):
        raise RuntimeError(f"cannot compute the {norm_type} norm of an empty tensor: the maximum and minimum have "
                           "no identity")
    magnitude = xp.abs(array.astype(np.float64))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # 0 ** -1 = inf, as PyTorch
        if norm_type == math.inf:
            norm = xp.amax(magnitude)
        elif norm_type == -math.inf:
            norm = xp.amin(magnitude)
        elif norm_type == 0:
            norm = xp.sum((magnitude != 0).astype(np.float64))
        elif norm_type == 1:
            norm = xp.sum(magnitude)
        elif norm_type == 2:
            norm = xp.sqrt(xp.sum(magnitude * magnitude))
        else:
            norm = xp.sum(magnitude**norm_type) ** (1.0 / norm_type)
    return xp.as_array(norm)  # numpy gives scalars for 0-d results


def _gradients(parameters: list[Any]) -> list[Tensor]:
    for index, param in enumerate(parameters):
        if not isinstance(param, Tensor):
            raise TypeError(f"parameters[{index}] must be a Tensor, got {type(param).__name__}")
    return [p.grad for p in parameters if p.grad is not None]


def _check_same_device(parameters: list[Any]) -> None:
    for index, param in enumerate(parameters):
        if not isinstance(param, Tensor):
            raise TypeError(f"parameters[{index}] must be a Tensor, got {type(param).__name__}")
    if len({p.device for p in parameters}) > 1:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")


def _as_float(name: str, value: Any) -> float:
    """``float(value)``, as PyTorch converts (so ``'inf'`` is accepted), or a clear error."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be a number (or 'inf'), got {value!r}") from error


def _check_foreach(foreach: Any) -> None:
    if foreach is not None and not isinstance(foreach, (bool, np.bool_)):
        raise TypeError(f"foreach must be None or a bool, got {foreach!r}")
