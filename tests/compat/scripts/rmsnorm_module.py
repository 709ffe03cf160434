"""A hand-written RMSNorm (x * rsqrt(mean(x^2) + eps) * weight) against nn.RMSNorm, and LayerNorm without
affine: RMSNorm keeps the mean but makes the root mean square 1; LayerNorm makes the mean 0 and std 1."""
import numpy as np
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # one learnable parameter: the scale (gamma)

    def forward(self, x):
        rms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * rms * self.weight


batch_size, seq_len, dim = 2, 5, 4
rng = np.random.default_rng(24)
x = torch.tensor(rng.standard_normal((batch_size, seq_len, dim)) + 0.5, dtype=torch.float32, requires_grad=True)

rms_norm = RMSNorm(dim)
out_rms = rms_norm(x)
print(f"Input shape: {x.shape}")
print(f"RMSNorm output shape: {out_rms.shape}")
print("RMSNorm output (first token of first batch):", [round(v, 5) for v in out_rms[0, 0].tolist()])
rms_val = torch.sqrt(torch.mean(out_rms[0, 0] ** 2))
print(f"output RMS (approx 1.0): {rms_val.item():.4f}, mean {out_rms[0, 0].mean().item():.4f}")

builtin = nn.RMSNorm(dim, eps=1e-6)
print(builtin)
print("nn.RMSNorm matches:", torch.allclose(builtin(x), out_rms, atol=1e-6))
with torch.no_grad():
    rms_norm.weight.copy_(torch.tensor([0.5, 1.0, 1.5, 2.0]))
    builtin.weight.copy_(rms_norm.weight)
upstream = torch.tensor(rng.standard_normal(x.shape), dtype=torch.float32)
rms_norm(x).backward(upstream)
mine = x.grad.clone()
x.grad = None
builtin(x).backward(upstream)
print("same input gradient:", torch.allclose(mine, x.grad, atol=1e-5),
      "same weight gradient:", torch.allclose(rms_norm.weight.grad, builtin.weight.grad, atol=1e-5))
print("weight grad", [round(v, 5) for v in builtin.weight.grad.tolist()])
print("F.rms_norm:", torch.allclose(nn.functional.rms_norm(x, (dim,), builtin.weight, 1e-6), builtin(x), atol=1e-6))
machine_eps = torch.finfo(torch.float32).eps
print("eps=None uses the dtype's eps:", torch.allclose(nn.RMSNorm(dim)(x), RMSNorm(dim, eps=machine_eps)(x), atol=1e-6))

layer_norm = nn.LayerNorm(dim, elementwise_affine=False)
out_ln = layer_norm(x)
print("LayerNorm output (first token of first batch):", [round(v, 5) for v in out_ln[0, 0].tolist()])
print(f"LayerNorm mean (approx 0): {out_ln[0, 0].mean().item() + 0.0:.4f}")
print(f"LayerNorm std  (approx 1): {out_ln[0, 0].std(unbiased=False).item():.4f}")
print(sum(p.numel() for p in builtin.parameters()), sum(p.numel() for p in nn.LayerNorm(dim).parameters()))
