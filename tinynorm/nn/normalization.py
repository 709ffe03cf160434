"""Normalization layers: BatchNorm1d/2d/3d, InstanceNorm1d/2d, LayerNorm, RMSNorm, GroupNorm.

Arguments, defaults, train/eval behaviour, running statistics and state_dict keys are PyTorch's.
Each layer calls its function in :mod:`tinynorm.ops.normalization`, which checks the input against
the parameters and statistics (shapes, dtypes, devices, groups, values per channel) and holds the
autograd; the math, in plain numpy, is in :mod:`tinynorm.kernels.reference`. A layer checks only what
is its own: its constructor arguments, ``eps``/``momentum`` whenever they are assigned
(``layer.momentum = 5`` raises at once), and the input's rank where PyTorch's layer checks it
(BatchNorm1d/2d/3d, InstanceNorm); so ``nn.LayerNorm(4)(x)`` and ``F.layer_norm(x, (4,), w, b)`` fail
with the same error.

Mixed precision: a float32 layer takes float16 input (float32 statistics, parameters and arithmetic,
float16 output), as PyTorch does on the GPU; see tinynorm/ops/normalization.py.

Additions to PyTorch: ``freeze()``/``unfreeze()`` on BatchNorm (statistics that stay frozen even
after a later ``model.train()``), and an error, not a warning, when an InstanceNorm receives a
different number of channels than ``num_features``.
"""
from __future__ import annotations

from functools import partial
from typing import Any

from .. import creation
from .._checks import CheckedAttribute, check_eps, check_momentum, check_tensor
from ..ops.local_pooling import local_response_norm
from ..ops.normalization import batch_norm, group_norm, instance_norm, layer_norm, normalized_shape_tuple, rms_norm
from ..tensor import Tensor
from . import init
from .module import Module, Parameter


def _check_positive_int(layer: str, name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{layer}: {name} must be a positive int, got {value!r}")
    return value


def _reset_affine(weight: Parameter | None, bias: Parameter | None) -> None:
    """The initial affine transform, the identity: weight 1 and bias 0 (each where the layer has it)."""
    if weight is not None:
        init.ones_(weight)
    if bias is not None:
        init.zeros_(bias)


class _NormBase(Module):
    """What BatchNorm and InstanceNorm share: affine parameters and running statistics per channel."""

    eps = CheckedAttribute(check_eps)
    momentum = CheckedAttribute(partial(check_momentum, allow_none=True))
    _optional_state = ("num_batches_tracked",)  # a state dict without it keeps the layer's count (as PyTorch)

    def __init__(self, num_features: int, eps: float, momentum: float | None, affine: bool,
                 track_running_stats: bool, dtype: Any = None, bias: bool = True) -> None:
        super().__init__()
        self.num_features = _check_positive_int(type(self).__name__, "num_features", num_features)
        self.eps, self.momentum = eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.frozen = False
        self.register_parameter("weight", Parameter(creation.ones(num_features, dtype=dtype)) if affine else None)
        self.register_parameter("bias", Parameter(creation.zeros(num_features, dtype=dtype)) if affine and bias else None)
        if track_running_stats:
            self.register_buffer("running_mean", creation.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", creation.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", creation.zeros((), dtype="int64"))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1.0)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_affine(self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _expected_dims: tuple[int, ...] = ()
    _layout = ""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, *, dtype: Any = None, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype, bias)

    def freeze(self) -> "_BatchNorm":
        """Normalize with the running statistics and never update them, even in training mode.

        Unlike ``eval()``, this survives a later ``model.train()`` (the usual way fine-tuning code
        silently unfreezes BatchNorm). The affine weight and bias still train unless you also call
        ``requires_grad_(False)``.
        """
        if not self.track_running_stats:
            raise ValueError(f"{type(self).__name__}: cannot freeze a layer without running statistics (track_running_stats=False)")
        self.frozen = True
        return self

    def unfreeze(self) -> "_BatchNorm":
        self.frozen = False
        return self

    def _next_batch_weight(self) -> float:
        """The weight of the next batch's statistics in the running average.

        ``momentum=None`` gives a cumulative moving average: the k-th batch gets weight 1/k, so the
        running statistics are the plain mean over all batches seen.
        """
        if self.momentum is None:
            return 1.0 / (int(self.num_batches_tracked.item()) + 1)
        return self.momentum

    def forward(self, input: Tensor) -> Tensor:
        x = check_tensor(type(self).__name__, "input", input)
        self._check_input_dims(x)
        use_batch_stats = (self.training and not self.frozen) or not self.track_running_stats
        counted = use_batch_stats and self.track_running_stats
        running_mean, running_var = (self.running_mean, self.running_var) if self.track_running_stats else (None, None)
        y = self._normalize(x, running_mean, running_var, use_batch_stats, self._next_batch_weight() if counted else 0.0)
        if counted:  # only once the batch was accepted (one value per channel is refused)
            self.num_batches_tracked.array += 1  # in place (an assignment through [...] would copy it onto itself)
            self.num_batches_tracked._bump_version()
        return y

    def _check_input_dims(self, x: Tensor) -> None:
        if x.ndim not in self._expected_dims:
            raise ValueError(
                f"{type(self).__name__}: expected {' or '.join(f'{d}D' for d in self._expected_dims)} input "
                f"{self._layout}, got {x.ndim}D input of shape {tuple(x.shape)}"
            )

    def _normalize(self, x: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                   use_batch_stats: bool, momentum: float) -> Tensor:
        """Normalize ``x`` with batch or running statistics (SyncBatchNorm overrides this step)."""
        return batch_norm(x, running_mean, running_var, self.weight, self.bias, use_batch_stats, momentum, self.eps)


class BatchNorm1d(_BatchNorm):
    """BatchNorm over (N, C) or (N, C, L): statistics per channel over N (and L)."""

    _expected_dims, _layout = (2, 3), "(N, C) or (N, C, L)"


class BatchNorm2d(_BatchNorm):
    """BatchNorm over (N, C, H, W): statistics per channel over N, H and W."""

    _expected_dims, _layout = (4,), "(N, C, H, W)"


class BatchNorm3d(_BatchNorm):
    """BatchNorm over (N, C, D, H, W): statistics per channel over N, D, H and W."""

    _expected_dims, _layout = (5,), "(N, C, D, H, W)"


class _InstanceNorm(_NormBase):
    """As PyTorch's InstanceNorm: ``num_batches_tracked`` stays 0, and ``momentum=None`` (not
    documented for InstanceNorm) counts as 0, so the running statistics then stay as initialized."""

    _spatial_dims = 0

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = False,
                 track_running_stats: bool = False, *, dtype: Any = None, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype, bias)

    def forward(self, input: Tensor) -> Tensor:
        x = check_tensor(type(self).__name__, "input", input)
        batched = self._spatial_dims + 2
        if x.ndim not in (batched, batched - 1):
            raise ValueError(
                f"{type(self).__name__}: expected {batched}D input (N, C, *spatial) or {batched - 1}D unbatched "
                f"input, got shape {tuple(x.shape)}"
            )
        unbatched = x.ndim == batched - 1
        channels = x.shape[0 if unbatched else 1]
        if channels != self.num_features:  # PyTorch warns; see docs/normalization.md
            raise ValueError(f"{type(self).__name__}: expected {self.num_features} channels (num_features), got "
                             f"input of shape {tuple(x.shape)} with {channels} channels")
        use_input_stats = self.training or not self.track_running_stats
        y = instance_norm(x.unsqueeze(0) if unbatched else x, self.running_mean, self.running_var, self.weight,
                          self.bias, use_input_stats, self.momentum if self.momentum is not None else 0.0, self.eps)
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """Normalize each (sample, channel) of (N, C, L) over L."""

    _spatial_dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Normalize each (sample, channel) of (N, C, H, W) over H and W (style transfer's norm)."""

    _spatial_dims = 2


class InstanceNorm3d(_InstanceNorm):
    """Normalize each (sample, channel) of (N, C, D, H, W) over D, H and W."""

    _spatial_dims = 3


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` dims of each sample (Transformers' norm)."""

    eps = CheckedAttribute(check_eps)

    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, *, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = normalized_shape_tuple("LayerNorm", normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = Parameter(creation.ones(*self.normalized_shape, dtype=dtype)) if elementwise_affine else None
        self.bias = Parameter(creation.zeros(*self.normalized_shape, dtype=dtype)) if elementwise_affine and bias else None

    def reset_parameters(self) -> None:
        _reset_affine(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """Divide by the root mean square over the trailing dims (no centring, no bias): LLMs' norm.

    ``eps=None`` uses the input dtype's machine epsilon, as PyTorch.
    """

    eps = CheckedAttribute(partial(check_eps, allow_none=True))

    def __init__(self, normalized_shape: Any, eps: float | None = None, elementwise_affine: bool = True,
                 *, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = normalized_shape_tuple("RMSNorm", normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = Parameter(creation.ones(*self.normalized_shape, dtype=dtype)) if elementwise_affine else None

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """Split the channels into ``num_groups`` groups; normalize each sample's group over its channels
    and spatial dims. Independent of the batch size (Wu & He 2018)."""

    eps = CheckedAttribute(check_eps)

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 *, dtype: Any = None, bias: bool = True) -> None:
        super().__init__()
        _check_positive_int("GroupNorm", "num_groups", num_groups)
        _check_positive_int("GroupNorm", "num_channels", num_channels)
        if num_channels % num_groups:
            raise ValueError(
                f"GroupNorm: num_channels={num_channels} must be divisible by num_groups={num_groups}"
            )
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.register_parameter("weight", Parameter(creation.ones(num_channels, dtype=dtype)) if affine else None)
        self.register_parameter("bias", Parameter(creation.zeros(num_channels, dtype=dtype)) if affine and bias else None)

    def reset_parameters(self) -> None:
        _reset_affine(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, bias={self.bias is not None}"


class LocalResponseNorm(Module):
    """AlexNet's local response normalization across ``size`` neighbouring channels (``F.local_response_norm``)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
