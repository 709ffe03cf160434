"""Building blocks for the experiments: a norm factory, MLP, ResNet-style conv and Transformer blocks."""
from __future__ import annotations

from ..ops import relu
from ..tensor import Tensor
from .activation import GELU
from .attention import MultiheadSelfAttention
from .container import Sequential
from .conv import Conv2d
from .linear import Identity, Linear
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm, InstanceNorm2d, LayerNorm, RMSNorm
from .residual import Residual, check_placement

FEATURE_NORMS = ("layernorm", "rmsnorm", "batchnorm", "none")
CHANNEL_NORMS = ("batchnorm", "groupnorm", "layernorm", "instancenorm", "none")


def feature_norm(kind: str, features: int) -> Module:
    """A norm for (batch, ..., features) activations: 'layernorm', 'rmsnorm', 'batchnorm' (2-D input) or 'none'."""
    factories = {"layernorm": LayerNorm, "rmsnorm": RMSNorm, "batchnorm": BatchNorm1d, "none": Identity}
    if kind not in factories:
        raise ValueError(f"norm must be one of {FEATURE_NORMS}, got {kind!r}")
    return factories[kind](features)


def channel_norm(kind: str, channels: int, groups: int = 4) -> Module:
    """A norm for (N, C, H, W) activations.

    'batchnorm' (per channel over N, H, W), 'groupnorm' (``groups`` groups of channels per sample),
    'layernorm' (all of C, H, W per sample: GroupNorm with one group, as Wu & He compare it),
    'instancenorm' (each channel of each sample, with affine parameters), or 'none'.
    """
    if kind == "batchnorm":
        return BatchNorm2d(channels)
    if kind == "groupnorm":
        return GroupNorm(min(groups, channels), channels)
    if kind == "layernorm":
        return GroupNorm(1, channels)
    if kind == "instancenorm":
        return InstanceNorm2d(channels, affine=True)
    if kind == "none":
        return Identity()
    raise ValueError(f"norm must be one of {CHANNEL_NORMS}, got {kind!r}")


class MLPBlock(Sequential):
    """Linear -> GELU -> Linear, widening to ``hidden`` (default 4 * d) in between."""

    def __init__(self, d: int, hidden: int | None = None) -> None:
        super().__init__(Linear(d, hidden or 4 * d), GELU(), Linear(hidden or 4 * d, d))


class ConvBlock(Module):
    """ResNet basic block: relu(norm(conv(relu(norm(conv(x))))) + x), convs keeping the shape
    (3x3 by default; ``kernel_size=(1, 3)`` makes it a 1-D block for signals laid out as (N, C, 1, L))."""

    def __init__(self, channels: int, norm: str = "batchnorm", groups: int = 4,
                 kernel_size: int | tuple[int, int] = 3) -> None:
        super().__init__()
        size = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
        padding = (size[0] // 2, size[1] // 2)
        self.conv1 = Conv2d(channels, channels, size, padding=padding, bias=False)
        self.norm1 = channel_norm(norm, channels, groups)
        self.conv2 = Conv2d(channels, channels, size, padding=padding, bias=False)
        self.norm2 = channel_norm(norm, channels, groups)

    def forward(self, x: Tensor) -> Tensor:
        out = relu(self.norm1(self.conv1(x)))
        return relu(self.norm2(self.conv2(out)) + x)


class TransformerBlock(Sequential):
    """Causal self-attention then an MLP, each inside a :class:`Residual` with its own norm.

    With ``placement='pre'`` a stack of these blocks needs a final norm after the last block (as
    GPT-2 has); ``TinyTransformerLM`` adds it.
    """

    def __init__(self, d_model: int, n_heads: int, norm: str = "layernorm", placement: str = "pre") -> None:
        check_placement(placement)
        super().__init__(
            Residual(MultiheadSelfAttention(d_model, n_heads, causal=True), feature_norm(norm, d_model), placement),
            Residual(MLPBlock(d_model), feature_norm(norm, d_model), placement),
        )
