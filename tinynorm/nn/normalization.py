"""Normalization layers: BatchNorm1d/2d/3d, InstanceNorm1d/2d, LayerNorm, RMSNorm, GroupNorm.

Arguments, defaults, train/eval behaviour, running statistics and state_dict keys are PyTorch's.
The math is in ``tinynorm/ops/normalization.py`` (autograd) and ``tinynorm/kernels/cpu/`` (kernels).

Mixed precision: a float32 layer takes float16 input (float32 statistics, parameters and arithmetic,
float16 output), as PyTorch does on the GPU; see tinynorm/ops/normalization.py.

Additions to PyTorch: ``freeze()``/``unfreeze()`` on BatchNorm (statistics that stay frozen even
after a later ``model.train()``), and an error, not a warning, when an InstanceNorm receives a
different number of channels than ``num_features``.
"""
from __future__ import annotations

from typing import Any

from .. import creation
from ..ops import normalization as F
from ..tensor import Tensor
from . import init
from .module import Module, Parameter


def _check_dtype(layer: Module, x: Tensor, reference: Tensor | None) -> None:
    """A clear error when the input's dtype differs from the layer's parameters or statistics.

    One mix is allowed: float16 input to a float32 layer (mixed precision).
    """
    if reference is None or x.dtype == reference.dtype or F.stat_dtype(x.dtype) == reference.dtype:
        return
    raise TypeError(
        f"{type(layer).__name__}: input dtype {x.dtype} differs from the layer's {reference.dtype} (only float16 "
        f"input may meet a float32 layer); convert the input or the layer (e.g. layer.to({x.dtype}))"
    )


class _NormBase(Module):
    """What BatchNorm and InstanceNorm share: affine parameters and running statistics per channel."""

    def __init__(self, num_features: int, eps: float, momentum: float | None, affine: bool,
                 track_running_stats: bool, dtype: Any = None) -> None:
        super().__init__()
        if not isinstance(num_features, int) or num_features <= 0:
            raise ValueError(f"{type(self).__name__}: num_features must be a positive int, got {num_features!r}")
        if momentum is not None and not 0.0 <= momentum <= 1.0:
            raise ValueError(f"{type(self).__name__}: momentum must be in [0, 1] or None, got {momentum}")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.frozen = False
        if affine:
            self.weight = Parameter(creation.ones(num_features, dtype=dtype))
            self.bias = Parameter(creation.zeros(num_features, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
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
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def _check_channels(self, x: Tensor, channel_dim: int = 1) -> None:
        if x.shape[channel_dim] != self.num_features:
            raise ValueError(
                f"{type(self).__name__}: expected {self.num_features} channels (num_features), got input of "
                f"shape {tuple(x.shape)} with {x.shape[channel_dim]} channels"
            )
        _check_dtype(self, x, self.weight if self.weight is not None else self.running_mean)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _expected_dims: tuple[int, ...] = ()
    _layout = ""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, *, dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype)

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

    def _update_factor(self) -> float:
        """Count this batch and return the weight of its statistics in the running average.

        ``momentum=None`` gives a cumulative moving average: the k-th batch gets weight 1/k, so the
        running statistics are the plain mean over all batches seen.
        """
        self.num_batches_tracked.array += 1  # in place (an assignment through [...] would copy it onto itself)
        if self.momentum is None:
            return 1.0 / int(self.num_batches_tracked.item())
        return self.momentum

    def forward(self, x: Tensor) -> Tensor:
        self._check_input_dims(x)
        self._check_channels(x)
        use_batch_stats = (self.training and not self.frozen) or not self.track_running_stats
        if use_batch_stats:
            self._check_values_per_channel(x)
        momentum = self._update_factor() if use_batch_stats and self.track_running_stats else 0.0
        running_mean, running_var = (self.running_mean, self.running_var) if self.track_running_stats else (None, None)
        return self._normalize(x, running_mean, running_var, use_batch_stats, momentum)

    def _check_values_per_channel(self, x: Tensor) -> None:
        """Refuse a batch with one value per channel before it is counted (its variance is undefined)."""
        F.check_values_per_channel(type(self).__name__, x)

    def _check_input_dims(self, x: Tensor) -> None:
        if x.ndim not in self._expected_dims:
            raise ValueError(
                f"{type(self).__name__}: expected {' or '.join(f'{d}D' for d in self._expected_dims)} input "
                f"{self._layout}, got {x.ndim}D input of shape {tuple(x.shape)}"
            )

    def _normalize(self, x: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                   use_batch_stats: bool, momentum: float) -> Tensor:
        """Normalize ``x`` with batch or running statistics (SyncBatchNorm overrides this step)."""
        return F.batch_norm(x, running_mean, running_var, self.weight, self.bias, use_batch_stats, momentum, self.eps)


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
                 track_running_stats: bool = False, *, dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype)

    def forward(self, x: Tensor) -> Tensor:
        batched = self._spatial_dims + 2
        if x.ndim not in (batched, batched - 1):
            raise ValueError(
                f"{type(self).__name__}: expected {batched}D input (N, C, *spatial) or {batched - 1}D unbatched "
                f"input, got shape {tuple(x.shape)}"
            )
        unbatched = x.ndim == batched - 1
        self._check_channels(x, channel_dim=0 if unbatched else 1)
        use_input_stats = self.training or not self.track_running_stats
        y = F.instance_norm(x.unsqueeze(0) if unbatched else x, self.running_mean, self.running_var, self.weight,
                            self.bias, use_input_stats, self.momentum if self.momentum is not None else 0.0, self.eps)
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """Normalize each (sample, channel) of (N, C, L) over L."""

    _spatial_dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Normalize each (sample, channel) of (N, C, H, W) over H and W (style transfer's norm)."""

    _spatial_dims = 2


def _normalized_shape(name: str, normalized_shape: Any) -> tuple[int, ...]:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape or not all(isinstance(n, int) and n > 0 for n in shape):
        raise ValueError(f"{name}: normalized_shape must be a positive int or a tuple of them, got {normalized_shape!r}")
    return shape


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` dims of each sample (Transformers' norm)."""

    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, *, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _normalized_shape("LayerNorm", normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = Parameter(creation.ones(*self.normalized_shape, dtype=dtype)) if elementwise_affine else None
        self.bias = Parameter(creation.zeros(*self.normalized_shape, dtype=dtype)) if elementwise_affine and bias else None

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, x: Tensor) -> Tensor:
        F.check_trailing_dims("LayerNorm", x, self.normalized_shape)
        _check_dtype(self, x, self.weight)
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """Divide by the root mean square over the trailing dims (no centring, no bias): LLMs' norm.

    ``eps=None`` uses the input dtype's machine epsilon, as PyTorch.
    """

    def __init__(self, normalized_shape: Any, eps: float | None = None, elementwise_affine: bool = True,
                 *, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _normalized_shape("RMSNorm", normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = Parameter(creation.ones(*self.normalized_shape, dtype=dtype)) if elementwise_affine else None

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        F.check_trailing_dims("RMSNorm", x, self.normalized_shape)
        _check_dtype(self, x, self.weight)
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """Split the channels into ``num_groups`` groups; normalize each sample's group over its channels
    and spatial dims. Independent of the batch size (Wu & He 2018)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 *, dtype: Any = None) -> None:
        super().__init__()
        if not isinstance(num_groups, int) or num_groups <= 0:
            raise ValueError(f"GroupNorm: num_groups must be a positive int, got {num_groups!r}")
        if num_channels % num_groups:
            raise ValueError(
                f"GroupNorm: num_channels={num_channels} must be divisible by num_groups={num_groups}"
            )
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.weight = Parameter(creation.ones(num_channels, dtype=dtype)) if affine else None
        self.bias = Parameter(creation.zeros(num_channels, dtype=dtype)) if affine else None

    def reset_parameters(self) -> None:
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(
                f"GroupNorm: expected input of shape (N, {self.num_channels}, *), got {tuple(x.shape)}"
            )
        _check_dtype(self, x, self.weight)
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"
