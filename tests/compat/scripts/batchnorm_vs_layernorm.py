"""BatchNorm normalises each feature over the batch, LayerNorm each sample over its features: on a 2-D
batch, then on a 4-D [N, C, H, W] batch, each checked against the formula written out with allclose."""
import numpy as np
import torch
import torch.nn as nn

x = torch.tensor([
    [1.0, 2.0, 3.0],  # sample 1
    [4.0, 5.0, 6.0],  # sample 2
])
bn = nn.BatchNorm1d(num_features=3)
print(bn(x))  # each column (feature) normalised: [1, 4] has mean 2.5 and std 1.5
ln = nn.LayerNorm(normalized_shape=3)
print(ln(x))  # each row (sample) normalised: [1, 2, 3] has mean 2 and std 0.8165
print(bn)
print(ln)

rng = np.random.default_rng(22)
images = torch.tensor(rng.standard_normal((8, 3, 5, 5)) * 2 + 1, dtype=torch.float32)

# BatchNorm2d: one mean and variance per channel, over (N, H, W)
mean = images.mean(dim=(0, 2, 3), keepdim=True)
var = images.var(dim=(0, 2, 3), keepdim=True, unbiased=False)
print(mean.shape, [round(m, 5) for m in mean.flatten().tolist()])
manual_bn = (images - mean) / torch.sqrt(var + 1e-5)
bn2d = nn.BatchNorm2d(3)
print("BatchNorm2d == formula:", torch.allclose(bn2d(images), manual_bn, atol=1e-5))

# LayerNorm over [C, H, W]: one mean and variance per sample, over (C, H, W)
mean = images.mean(dim=(1, 2, 3), keepdim=True)
var = images.var(dim=(1, 2, 3), keepdim=True, unbiased=False)
print(mean.shape, [round(m, 5) for m in mean.flatten().tolist()])
manual_ln = (images - mean) / torch.sqrt(var + 1e-5)
ln4d = nn.LayerNorm([3, 5, 5])
print("LayerNorm == formula:", torch.allclose(ln4d(images), manual_ln, atol=1e-5))
print(ln4d.weight.shape, ln4d.bias.shape, bn2d.weight.shape, bn2d.running_mean.shape)

# With learnable scale and shift, and through the functional forms
with torch.no_grad():
    bn2d.weight.copy_(torch.tensor([0.5, 1.0, 2.0]))
    bn2d.bias.copy_(torch.tensor([0.0, -1.0, 1.0]))
scaled = bn2d(images)
print("affine:", torch.allclose(scaled, manual_bn * bn2d.weight.view(1, 3, 1, 1) + bn2d.bias.view(1, 3, 1, 1),
                                atol=1e-5))
print("F.layer_norm:", torch.allclose(nn.functional.layer_norm(images, (3, 5, 5)), manual_ln, atol=1e-5))
print(f"{scaled.std().item():.5f} {ln4d(images).mean().item():.6f}")
print("running_mean", [round(v, 5) for v in bn2d.running_mean.tolist()], bn2d.num_batches_tracked.item())
