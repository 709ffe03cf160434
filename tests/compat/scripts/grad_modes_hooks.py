"""Autograd controls beyond backward(): no_grad as a decorator, enable_grad inside it, set_grad_enabled,
inference_mode, requires_grad_(), retain_grad on an intermediate, tensor hooks that read and rescale a
gradient, gradients accumulating over two backward passes, retain_graph, zeroing .grad in place, and
the errors PyTorch raises for backward on a non-scalar and a second backward through a freed graph."""
import numpy as np
import torch

rng = np.random.default_rng(6)
w = torch.from_numpy(rng.normal(size=(3, 2)).astype(np.float32)).requires_grad_()
x = torch.from_numpy(rng.normal(size=(4, 3)).astype(np.float32))


@torch.no_grad()
def evaluate(inputs):
    out = inputs @ w
    with torch.enable_grad():
        inside = (inputs @ w).sum()
    return out.requires_grad, inside.requires_grad


print(evaluate(x), torch.is_grad_enabled())
with torch.set_grad_enabled(False):
    print((x @ w).requires_grad, torch.is_grad_enabled())
with torch.inference_mode():
    print((x @ w).requires_grad, torch.is_inference_mode_enabled())

h = x @ w
h.retain_grad()
seen = []
h.register_hook(lambda grad: seen.append(grad.abs().sum().item()))
w.register_hook(lambda grad: grad * 0.5)
loss = torch.tanh(h).pow(2).sum()
loss.backward(retain_graph=True)
print(h.grad, w.grad, [round(s, 4) for s in seen])
first = w.grad.clone()
loss.backward()
print(torch.allclose(w.grad, 2 * first), h.is_leaf, w.is_leaf, h.grad_fn is not None)
w.grad.zero_()
print(w.grad.abs().sum().item())

b = torch.zeros(2)
print(b.requires_grad, b.requires_grad_().requires_grad, b.is_leaf)
try:
    (x @ w).backward()
except RuntimeError as error:
    print("RuntimeError:", "scalar" in str(error))
y = (x @ w).exp().sum()
y.backward()
try:
    y.backward()
except RuntimeError as error:
    print("RuntimeError:", "second time" in str(error))
