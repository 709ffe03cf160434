"""Small models the experiments train: SmallCNN / SmallMLP for digits, a residual MLP stack, and
TinyTransformerLM, a character-level GPT-style language model."""
from __future__ import annotations

import math

import numpy as np

from . import nn
from .nn import init as init_module
from .nn.blocks import ConvBlock, MLPBlock, TransformerBlock, channel_norm, feature_norm
from .nn.residual import Residual, check_placement
from .tensor import Tensor, tensor


class SmallCNN(nn.Module):
    """conv3x3 -> norm -> ReLU -> ResNet block -> max-pool -> conv3x3 -> norm -> ReLU -> global average
    pool -> linear, for single-channel images (8x8 digits or 28x28).

    ``norm`` is one of 'batchnorm', 'groupnorm' (``groups`` groups), 'layernorm', 'instancenorm', 'none'.
    ``zero_init_residual``: start the residual block's last norm with weight 0, so the block begins as
    the identity (as torchvision's ResNet option of that name; Wu & He 2018 train this way).
    """

    def __init__(self, norm: str = "batchnorm", groups: int = 4, width: int = 16, num_classes: int = 10,
                 in_channels: int = 1, zero_init_residual: bool = False) -> None:
        super().__init__()
        self.norm_kind = norm
        self.stem = nn.Sequential(nn.Conv2d(in_channels, width, 3, padding=1, bias=False), channel_norm(norm, width, groups), nn.ReLU())
        self.block = ConvBlock(width, norm, groups)
        self.pool = nn.MaxPool2d(2)
        self.widen = nn.Sequential(nn.Conv2d(width, 2 * width, 3, padding=1, bias=False), channel_norm(norm, 2 * width, groups), nn.ReLU())
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * width, num_classes))
        if zero_init_residual:
            _zero_init_residual(self)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.widen(self.pool(self.block(self.stem(x)))))


class SignalCNN(nn.Module):
    """A 1-D ResNet for signals (N, L) such as MNIST-1D: a width-5 stem conv, then ``stages`` stages of
    one residual block each (width-3 convs), halving the length and doubling the channels between
    stages (max-pool, then conv -> norm -> ReLU), global average pool and a linear head.

    With ``pooled_stage=True`` the last stage's maps are first averaged to length 1, so its norms
    pool one value per sample and channel: the case of a deep stage on 1x1 maps. The layers are 2-D
    ones on (N, C, 1, L), which compute exactly the 1-D convolution, pooling and norms.
    ``norm`` as in :func:`channel_norm` ('batchnorm', 'groupnorm', 'layernorm', 'instancenorm', 'none');
    ``zero_init_residual`` as in :class:`SmallCNN`.
    """

    def __init__(self, norm: str = "batchnorm", width: int = 16, stages: int = 4, pooled_stage: bool = False,
                 groups: int = 4, num_classes: int = 10, zero_init_residual: bool = False) -> None:
        super().__init__()
        if stages < 1:
            raise ValueError(f"SignalCNN: stages must be >= 1, got {stages!r}")
        self.norm_kind = norm
        layers: list[nn.Module] = [nn.Conv2d(1, width, (1, 5), padding=(0, 2), bias=False),
                                   channel_norm(norm, width, groups), nn.ReLU()]
        channels = width
        for stage in range(stages):
            if stage > 0:
                layers += [nn.AdaptiveAvgPool2d(1) if pooled_stage and stage == stages - 1 else nn.MaxPool2d((1, 2)),
                           nn.Conv2d(channels, 2 * channels, (1, 3), padding=(0, 1), bias=False),
                           channel_norm(norm, 2 * channels, groups), nn.ReLU()]
                channels *= 2
            layers.append(ConvBlock(channels, norm, groups, kernel_size=(1, 3)))
        self.body = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, num_classes))
        if zero_init_residual:
            _zero_init_residual(self)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 2:
            raise ValueError(f"SignalCNN: expected signals (N, L), got shape {tuple(x.shape)}")
        return self.head(self.body(x.reshape(x.shape[0], 1, 1, x.shape[1])))


class SmallMLP(nn.Sequential):
    """Flatten -> [Linear -> norm -> ReLU] x 2 -> Linear, the MLP variant of the digits experiment.

    ``norm``: 'batchnorm', 'layernorm', 'rmsnorm' or 'none' over the hidden features.
    """

    def __init__(self, in_features: int = 64, hidden: int = 128, num_classes: int = 10, norm: str = "batchnorm") -> None:
        super().__init__(
            nn.Flatten(),
            nn.Linear(in_features, hidden), feature_norm(norm, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), feature_norm(norm, hidden), nn.ReLU(),
            nn.Linear(hidden, num_classes),
        )


class ResidualMLP(nn.Module):
    """``depth`` residual MLP blocks of width ``d`` with the norm placed 'pre' or 'post', then a head.

    A 'pre' stack ends with a final norm (as GPT-2 does), so its output is normalized too.
    """

    def __init__(self, in_features: int, d: int, depth: int, num_classes: int, norm: str = "layernorm",
                 placement: str = "pre") -> None:
        super().__init__()
        check_placement(placement)
        self.embed = nn.Linear(in_features, d)
        self.blocks = nn.ModuleList(Residual(MLPBlock(d, 2 * d), feature_norm(norm, d), placement) for _ in range(depth))
        self.final_norm = feature_norm(norm, d) if placement == "pre" else nn.Identity()
        self.head = nn.Linear(d, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        h = self.embed(x.flatten(1))
        for block in self.blocks:
            h = block(h)
        return self.head(self.final_norm(h))


INITS = ("gpt2", "fairseq")


class TinyTransformerLM(nn.Module):
    """A GPT-style character language model: token + position embeddings, ``n_layers``
    :class:`TransformerBlock` s, (a final norm for 'pre'), and a linear head over the vocabulary.

    Initialisation (explicit because the Pre-LN/Post-LN gradient results depend on it): every Linear
    weight is Xavier-uniform with zero bias, as in Xiong et al. 2020; norm weights are 1 and biases 0.
    The embeddings follow ``init``:

    * 'gpt2': learned token and position embeddings, both N(0, 0.02^2), as GPT-2 does;
    * 'fairseq': the translation Transformer's scheme (fairseq, the code base of Xiong et al.): token
      embeddings N(0, 1/d_model) multiplied by sqrt(d_model) in the forward pass (so every coordinate
      has unit variance) plus fixed sinusoidal positions (Vaswani et al. 2017).
    """

    def __init__(self, vocab: int, d_model: int = 64, n_heads: int = 4, n_layers: int = 2, block_size: int = 64,
                 norm: str = "layernorm", placement: str = "pre", init: str = "gpt2") -> None:
        super().__init__()
        check_placement(placement)
        if norm not in ("layernorm", "rmsnorm"):
            raise ValueError(f"TinyTransformerLM: norm must be 'layernorm' or 'rmsnorm', got {norm!r}")
        if init not in INITS:
            raise ValueError(f"TinyTransformerLM: init must be one of {INITS}, got {init!r}")
        self.block_size, self.placement, self.init = block_size, placement, init
        self.token_embedding = nn.Embedding(vocab, d_model)
        if init == "gpt2":
            self.position_embedding = nn.Embedding(block_size, d_model)
        else:
            self.register_buffer("position_table", tensor(sinusoidal_positions(block_size, d_model)), persistent=False)
        self.embed_scale = math.sqrt(d_model) if init == "fairseq" else 1.0
        self.blocks = nn.ModuleList(TransformerBlock(d_model, n_heads, norm, placement) for _ in range(n_layers))
        self.final_norm = feature_norm(norm, d_model) if placement == "pre" else nn.Identity()
        self.head = nn.Linear(d_model, vocab)
        self.apply(_xavier_init)
        if init == "fairseq":
            init_module.normal_(self.token_embedding.weight, 0.0, d_model ** -0.5)

    def forward(self, ids: Tensor) -> Tensor:
        """Logits (B, T, vocab) for token ids (B, T)."""
        ids_data = ids.array if isinstance(ids, Tensor) else np.asarray(ids)
        if ids_data.ndim != 2 or ids_data.shape[1] > self.block_size:
            raise ValueError(f"TinyTransformerLM: expected ids (B, T) with T <= {self.block_size}, got shape {tuple(ids_data.shape)}")
        # Positions 0..T-1 select the table's first T rows: a slice, the same values and gradients as
        # looking up arange(T), without index arrays (whose range checks make a GPU wait).
        length = ids_data.shape[1]
        tokens = self.token_embedding(ids)
        if self.init == "gpt2":
            h = tokens + self.position_embedding.weight[:length]
        else:
            h = tokens * self.embed_scale + self.position_table[:length]
        for block in self.blocks:
            h = block(h)
        return self.head(self.final_norm(h))


def sinusoidal_positions(length: int, d_model: int) -> np.ndarray:
    """(length, d_model) float32 table: sin(p / 10000^(2i/d)) in the first half of the columns and the
    matching cosines in the second half (the layout fairseq uses; the order of columns is immaterial)."""
    half = d_model // 2
    frequencies = np.exp(-math.log(10000.0) * np.arange(half) / max(half - 1, 1))
    angles = np.arange(length)[:, None] * frequencies[None, :]
    table = np.zeros((length, d_model))
    table[:, :half], table[:, half:2 * half] = np.sin(angles), np.cos(angles)
    return table.astype(np.float32)


def _zero_init_residual(model: nn.Module) -> None:
    """Weight 0 for the last norm of every residual block of ``model`` that has a weight ('none' has not)."""
    for block in model.modules():
        if isinstance(block, ConvBlock) and getattr(block.norm2, "weight", None) is not None:
            init_module.zeros_(block.norm2.weight)


def _xavier_init(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        init_module.xavier_uniform_(module.weight)
        if module.bias is not None:
            init_module.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        init_module.normal_(module.weight, 0.0, 0.02)
