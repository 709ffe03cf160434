"""Building models from containers and looking inside them: Sequential from an OrderedDict, ModuleList,
ModuleDict, ParameterList, ParameterDict, a custom extra_repr, print(model), named_modules, children,
named_parameters, state_dict keys, get_submodule, requires_grad_ and counting parameters."""
from collections import OrderedDict

import numpy as np
import torch
from torch import nn


class Scale(nn.Module):
    def __init__(self, features, init=1.0):
        super().__init__()
        self.features = features
        self.scale = nn.Parameter(torch.full((features,), init))

    def forward(self, x):
        return x * self.scale

    def extra_repr(self):
        return f"features={self.features}"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(OrderedDict([
            ('fc', nn.Linear(4, 8)),
            ('act', nn.ReLU()),
        ]))
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
        self.heads = nn.ModuleDict({'cls': nn.Linear(8, 3), 'reg': nn.Linear(8, 1)})
        self.gains = nn.ParameterList([nn.Parameter(torch.ones(8)) for _ in range(2)])
        self.extras = nn.ParameterDict({'shift': nn.Parameter(torch.zeros(8))})
        self.scale = Scale(8, init=0.5)

    def forward(self, x, head='cls'):
        x = self.stem(x)
        for block, gain in zip(self.blocks, self.gains):
            x = x + torch.tanh(block(x)) * gain
        x = self.scale(x + self.extras['shift'])
        return self.heads[head](x)


model = Net()
rng = np.random.default_rng(3)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(0, 0.5, p.shape).astype(np.float32)))

for part in (model.stem, model.blocks, model.heads, model.scale):
    print(part)
print([name for name, _ in model.named_modules()])
print([type(child).__name__ for child in model.children()])
for name, p in model.named_parameters():
    print(name, tuple(p.shape), p.requires_grad)
print(list(model.state_dict().keys()))
print(sum(p.numel() for p in model.parameters()))
print(model.get_submodule('stem.fc'))
print(model.stem.fc is model.stem[0], len(model.blocks), len(model.heads), 'cls' in model.heads)

x = torch.from_numpy(rng.normal(size=(5, 4)).astype(np.float32))
print(model(x))
print(model(x, head='reg').squeeze(1))

model.stem.requires_grad_(False)
print([name for name, p in model.named_parameters() if p.requires_grad])
loss = model(x).pow(2).mean()
loss.backward()
print(model.stem.fc.weight.grad is None, model.gains[0].grad)
print(f"{loss.item():.6f}")
