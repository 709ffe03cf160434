"""InstanceNorm normalises each sample's channel over (H, W); GroupNorm each sample over groups of channels.
GroupNorm with one group is LayerNorm over (C, H, W), with one channel per group InstanceNorm."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(23)
x = torch.tensor(rng.standard_normal((2, 6, 4, 4)) * 3 - 2, dtype=torch.float32, requires_grad=True)

instance = nn.InstanceNorm2d(6)
mean = x.mean(dim=(2, 3), keepdim=True)
var = x.var(dim=(2, 3), keepdim=True, unbiased=False)
print("InstanceNorm2d == formula:", torch.allclose(instance(x), (x - mean) / torch.sqrt(var + 1e-5), atol=1e-5))
print(instance, instance.weight)

group = nn.GroupNorm(num_groups=3, num_channels=6)
grouped = x.view(2, 3, -1)
mean = grouped.mean(dim=-1, keepdim=True)
var = grouped.var(dim=-1, keepdim=True, unbiased=False)
manual = ((grouped - mean) / torch.sqrt(var + 1e-5)).view_as(x)
print("GroupNorm == formula:", torch.allclose(group(x), manual, atol=1e-5))
print(group, group.weight.shape)

one_group = nn.GroupNorm(1, 6, affine=False)
layer = nn.LayerNorm([6, 4, 4], elementwise_affine=False)
print("GroupNorm(1, C) == LayerNorm:", torch.allclose(one_group(x), layer(x), atol=1e-5))
per_channel = nn.GroupNorm(6, 6, affine=False)
print("GroupNorm(C, C) == InstanceNorm:", torch.allclose(per_channel(x), instance(x), atol=1e-5))

affine = nn.InstanceNorm2d(6, affine=True)
with torch.no_grad():
    affine.weight.copy_(torch.linspace(0.5, 1.5, 6))
    affine.bias.copy_(torch.linspace(-1, 1, 6))
upstream = torch.tensor(rng.standard_normal(x.shape), dtype=torch.float32)
for name, norm in [("group", group), ("instance", affine)]:
    x.grad = None
    out = norm(x)
    out.backward(upstream)
    print(name, f"{out.sum().item():.4f}", f"{x.grad.abs().sum().item():.5f}",
          [round(v, 5) for v in norm.weight.grad.tolist()])

seq = torch.tensor(rng.standard_normal((2, 3, 10)), dtype=torch.float32)
print("InstanceNorm1d:", torch.allclose(nn.InstanceNorm1d(3)(seq), nn.functional.instance_norm(seq), atol=1e-6),
      f"{nn.functional.group_norm(seq, 3).abs().sum().item():.4f}")
