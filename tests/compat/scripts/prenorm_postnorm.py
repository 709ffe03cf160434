"""Post-norm residual blocks (LayerNorm(x + F(x)), the original Transformer) against pre-norm blocks
(x + F(LayerNorm(x)), modern Transformers) six deep: the residual stream's scale and the gradient that
reaches the first block, from the same weights."""
import numpy as np
import torch
import torch.nn as nn


class FeedForward(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        return self.net(x)


class PostNormBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ff = FeedForward(dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(x + self.ff(x))


class PreNormBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.ff = FeedForward(dim)

    def forward(self, x):
        return x + self.ff(self.norm(x))


dim, depth = 8, 6
rng = np.random.default_rng(27)
weights = [rng.uniform(-0.5, 0.5, shape).astype(np.float32)
           for _ in range(depth) for shape in [(4 * dim, dim), (4 * dim,), (dim, 4 * dim), (dim,)]]
x = torch.tensor(rng.standard_normal((3, 5, dim)), dtype=torch.float32)
upstream = torch.tensor(rng.standard_normal((3, 5, dim)), dtype=torch.float32)

for name, block in [("post-norm", PostNormBlock), ("pre-norm", PreNormBlock)]:
    blocks = nn.ModuleList([block(dim) for _ in range(depth)])
    linears = [m for m in blocks.modules() if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for i, linear in enumerate(linears):
            linear.weight.copy_(torch.from_numpy(weights[2 * i]))
            linear.bias.copy_(torch.from_numpy(weights[2 * i + 1]))
    final_norm = nn.LayerNorm(dim) if block is PreNormBlock else nn.Identity()

    h = x
    scales = []
    for b in blocks:
        h = b(h)
        scales.append(round(h.std().item(), 4))
    out = final_norm(h)
    out.backward(upstream)
    first = blocks[0].ff.net[0].weight.grad.norm().item()
    last = blocks[-1].ff.net[0].weight.grad.norm().item()
    print(f"{name}: residual stream std by depth {scales}")
    print(f"{name}: gradient norm first block {first:.5f}, last block {last:.5f}, ratio {first / last:.4f}")
    print(f"{name}: output mean {out.mean().item():.5f} std {out.std(unbiased=False).item():.5f}")
    print(f"{name}: parameters {sum(p.numel() for p in blocks.parameters())}, "
          f"{len(list(blocks.named_parameters()))} tensors, first {next(iter(blocks.state_dict()))}")
