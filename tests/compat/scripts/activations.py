"""The activation modules and functions a model zoo uses, with their reprs, values and gradients (a
random upstream gradient): SiLU, GELU (exact and tanh), Mish, ELU, Softplus, Hardswish, LeakyReLU, ReLU6,
PReLU, Sigmoid, Tanh, Softmax and LogSoftmax, and inplace=True where PyTorch has it."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(5)
x = torch.from_numpy((3 * rng.normal(size=(2, 5))).astype(np.float32))
upstream = torch.from_numpy(rng.normal(size=(2, 5)).astype(np.float32))

modules = [
    nn.SiLU(), nn.GELU(), nn.GELU(approximate='tanh'), nn.Mish(), nn.ELU(alpha=0.5), nn.Softplus(beta=2),
    nn.Hardswish(), nn.LeakyReLU(0.2), nn.ReLU6(), nn.PReLU(), nn.Sigmoid(), nn.Tanh(), nn.Softmax(dim=1),
    nn.LogSoftmax(dim=-1), nn.ReLU(inplace=True), nn.LeakyReLU(negative_slope=0.1, inplace=True),
]
for module in modules:
    inputs = x.clone().requires_grad_(True)
    out = module(inputs * 1.0)  # an in-place activation must not write into a leaf
    (out * upstream).sum().backward()
    print(module)
    print(out)
    print(inputs.grad)

functions = [F.silu, F.gelu, F.mish, F.elu, F.softplus, F.hardswish, F.leaky_relu, F.relu6, torch.sigmoid,
             torch.tanh, F.relu]
for function in functions:
    print(function.__name__, function(x).sum().item())
print(F.leaky_relu(x, 0.3).min().item(), F.elu(x, alpha=2.0).min().item(), F.gelu(x, approximate='tanh')[0])
print(F.softmax(x, dim=0).sum(0), F.log_softmax(x, dim=1).exp().sum(1))

prelu = nn.PReLU(num_parameters=5, init=0.1)
print(prelu, prelu.weight)
