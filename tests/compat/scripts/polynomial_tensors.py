"""Fit y = sin(x) with a third-order polynomial, computing the gradients by hand on tensors
("Learning PyTorch with Examples": PyTorch: Tensors)."""
import math

import numpy as np
import torch

dtype = torch.float
device = torch.device("cpu")

x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
y = torch.sin(x)

# Start from fixed weights (the tutorial draws them with torch.randn) so that every run gives the same numbers.
start = np.random.default_rng(0).standard_normal(4).astype(np.float32)
a, b, c, d = (torch.tensor(value, device=device, dtype=dtype) for value in start)

learning_rate = 1e-6
for t in range(500):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3

    loss = (y_pred - y).pow(2).sum().item()
    if t % 100 == 99:
        print(t, loss)

    grad_y_pred = 2.0 * (y_pred - y)
    grad_a = grad_y_pred.sum()
    grad_b = (grad_y_pred * x).sum()
    grad_c = (grad_y_pred * x ** 2).sum()
    grad_d = (grad_y_pred * x ** 3).sum()

    a -= learning_rate * grad_a
    b -= learning_rate * grad_b
    c -= learning_rate * grad_c
    d -= learning_rate * grad_d

print(f"Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3")
assert loss < 1000
