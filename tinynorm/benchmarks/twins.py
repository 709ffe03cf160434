"""tinynorm's models written with ``torch.nn``, for the benchmarks that time PyTorch on the same model.

Module and parameter names match tinynorm's, so a tinynorm model's ``state_dict`` loads strictly and both
libraries start from the same weights. The Transformer's attention is the same math as tinynorm's (an
explicit causal mask, softmax, then the values), not PyTorch's fused ``scaled_dot_product_attention``:
the benchmarks compare one model in two libraries. ``torch`` is passed in, so importing this module
never imports PyTorch.
"""
from __future__ import annotations

from typing import Any


def torch_small_cnn(torch: Any, norm: str = "batchnorm", groups: int = 4, width: int = 16,
                    num_classes: int = 10) -> Any:
    """tinynorm.models.SmallCNN (same arguments and defaults) written with torch.nn, with the same parameter names."""
    tnn = torch.nn

    def channel_norm(channels: int) -> Any:
        return tnn.BatchNorm2d(channels) if norm == "batchnorm" else tnn.GroupNorm(min(groups, channels), channels)

    def conv(n_in: int, n_out: int) -> Any:
        return tnn.Conv2d(n_in, n_out, 3, padding=1, bias=False)

    class ConvBlock(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.norm1 = conv(width, width), channel_norm(width)
            self.conv2, self.norm2 = conv(width, width), channel_norm(width)

        def forward(self, x: Any) -> Any:
            out = torch.relu(self.norm1(self.conv1(x)))
            return torch.relu(self.norm2(self.conv2(out)) + x)

    class SmallCNN(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = tnn.Sequential(conv(1, width), channel_norm(width), tnn.ReLU())
            self.block = ConvBlock()
            self.pool = tnn.MaxPool2d(2)
            self.widen = tnn.Sequential(conv(width, 2 * width), channel_norm(2 * width), tnn.ReLU())
            self.head = tnn.Sequential(tnn.AdaptiveAvgPool2d(1), tnn.Flatten(), tnn.Linear(2 * width, num_classes))

        def forward(self, x: Any) -> Any:
            return self.head(self.widen(self.pool(self.block(self.stem(x)))))

    return SmallCNN()


def torch_transformer_lm(torch: Any, vocab: int, d_model: int, n_heads: int, n_layers: int, block_size: int) -> Any:
    """tinynorm.models.TinyTransformerLM (LayerNorm, 'pre' placement) written with torch.nn, same names."""
    tnn = torch.nn

    class MultiheadSelfAttention(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv, self.proj = tnn.Linear(d_model, 3 * d_model), tnn.Linear(d_model, d_model)

        def forward(self, x: Any) -> Any:
            batch, length, _ = x.shape
            head = d_model // n_heads
            q, k, v = self.qkv(x).reshape(batch, length, 3, n_heads, head).permute(2, 0, 3, 1, 4)
            scores = q @ k.transpose(-2, -1) * (1.0 / head ** 0.5)
            scores = scores + torch.full((length, length), float("-inf"), device=x.device).triu(1)
            out = torch.softmax(scores, dim=-1) @ v
            return self.proj(out.transpose(1, 2).reshape(batch, length, d_model))

    class Residual(tnn.Module):
        def __init__(self, sublayer: Any) -> None:
            super().__init__()
            self.sublayer, self.norm = sublayer, tnn.LayerNorm(d_model)

        def forward(self, x: Any) -> Any:
            return x + self.sublayer(self.norm(x))

    def mlp() -> Any:
        return tnn.Sequential(tnn.Linear(d_model, 4 * d_model), tnn.GELU(), tnn.Linear(4 * d_model, d_model))

    class TinyTransformerLM(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.token_embedding = tnn.Embedding(vocab, d_model)
            self.position_embedding = tnn.Embedding(block_size, d_model)
            self.blocks = tnn.ModuleList(tnn.Sequential(Residual(MultiheadSelfAttention()), Residual(mlp()))
                                         for _ in range(n_layers))
            self.final_norm = tnn.LayerNorm(d_model)
            self.head = tnn.Linear(d_model, vocab)

        def forward(self, ids: Any) -> Any:
            h = self.token_embedding(ids) + self.position_embedding(torch.arange(ids.shape[1], device=ids.device))
            for block in self.blocks:
                h = block(h)
            return self.head(self.final_norm(h))

    return TinyTransformerLM()
