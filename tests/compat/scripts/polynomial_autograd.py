"""The same fit with autograd: requires_grad, backward() and a manual update under no_grad
("Learning PyTorch with Examples": PyTorch: Tensors and autograd)."""
import math

import numpy as np
import torch

dtype = torch.float
device = "cpu"
torch.set_default_device(device)

x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
y = torch.sin(x)

start = np.random.default_rng(1).standard_normal(4)
a = torch.tensor(start[0], dtype=dtype, requires_grad=True)
b = torch.tensor(start[1], dtype=dtype, requires_grad=True)
c = torch.tensor(start[2], dtype=dtype, requires_grad=True)
d = torch.tensor(start[3], dtype=dtype, requires_grad=True)

learning_rate = 1e-6
for t in range(500):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3

    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        print(t, loss.item())

    loss.backward()

    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad

        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None

print(f"Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3")
print(a.requires_grad, a.is_leaf, a.grad)
