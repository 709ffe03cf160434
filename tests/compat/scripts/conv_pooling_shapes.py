"""Convolution and pooling options that model code relies on, checked by shapes and values: Conv2d with
padding='same' and 'valid', dilation and groups, Conv1d, MaxPool2d(ceil_mode=True), AvgPool2d with
count_include_pad=False, adaptive pooling to any size, MaxPool1d/AvgPool1d, F.pad, F.interpolate and
nn.Upsample, nn.Unflatten and nn.Identity, with gradients flowing back to the input."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(8)


def filled(module):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.normal(0, 0.3, p.shape).astype(np.float32)))
    return module


x = torch.from_numpy(rng.normal(size=(2, 4, 7, 7)).astype(np.float32)).requires_grad_(True)
layers = [
    filled(nn.Conv2d(4, 6, 3, padding='same')),
    filled(nn.Conv2d(4, 6, 3, padding='valid', dilation=2)),
    filled(nn.Conv2d(4, 8, 3, padding=1, groups=2, bias=False)),
    filled(nn.Conv2d(4, 4, 3, stride=2, padding=1, groups=4)),
    nn.MaxPool2d(2, ceil_mode=True),
    nn.MaxPool2d(3, stride=2, padding=1),
    nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
    nn.AvgPool2d(2, ceil_mode=True),
    nn.AdaptiveAvgPool2d((3, 2)),
    nn.AdaptiveAvgPool2d(1),
    nn.AdaptiveMaxPool2d((2, 2)),
    nn.Upsample(scale_factor=2, mode='nearest'),
    nn.Identity(54, unused=True),
]
total = 0
for layer in layers:
    out = layer(x)
    print(layer)
    print(out.shape, f"{out.sum().item():.5f}", f"{out.abs().max().item():.5f}")
    total = total + (out * out).mean()
total.backward()
print(x.grad.sum(), x.grad.abs().sum())

print(F.adaptive_avg_pool2d(x, (5, 3))[0, 0])
print(F.interpolate(x, size=(4, 5), mode='bilinear', align_corners=False)[1, 2])
print(F.interpolate(x, scale_factor=0.5, mode='nearest').shape)
print(F.pad(x, (1, 2)).shape, F.pad(x, (1, 1, 2, 0), value=-1.0)[0, 0, :3, :3])

seq = torch.from_numpy(rng.normal(size=(3, 2, 10)).astype(np.float32))
conv1d = filled(nn.Conv1d(2, 5, kernel_size=3, stride=2, padding=1))
print(conv1d, conv1d(seq).shape, conv1d(seq)[0, :, :2])
print(nn.MaxPool1d(2)(seq).shape, nn.AvgPool1d(4, stride=3)(seq)[1])
print(F.max_pool1d(seq, 3, stride=3).sum(), F.avg_pool1d(seq, 2).sum())

flat = torch.arange(24.0).reshape(2, 12)
unflatten = nn.Unflatten(1, (3, 4))
print(unflatten, unflatten(flat).shape, flat.unflatten(1, (2, 6)).shape)
