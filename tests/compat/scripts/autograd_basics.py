"""The autograd tutorial: a one-layer network with binary_cross_entropy_with_logits, gradients of w and b,
grad_fn names, requires_grad under no_grad and after detach(), and Jacobian-vector products with
retain_graph, which accumulate until the gradient is zeroed."""
import numpy as np
import torch

rng = np.random.default_rng(29)
x = torch.ones(5)  # the features
y = torch.zeros(3)  # the targets
w = torch.tensor(rng.standard_normal((5, 3)), dtype=torch.float32, requires_grad=True)
b = torch.tensor(rng.standard_normal(3), dtype=torch.float32, requires_grad=True)
z = torch.matmul(x, w)+b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)

print(f"Gradient function for z = {z.grad_fn.name()}")
print(f"Gradient function for loss = {loss.grad_fn.name()}")
print(f"loss = {loss.item():.6f}, z.is_leaf {z.is_leaf}, w.is_leaf {w.is_leaf}")

loss.backward()
print(w.grad)
print(b.grad)

z = torch.matmul(x, w)+b
print(z.requires_grad)

with torch.no_grad():
    z = torch.matmul(x, w)+b
print(z.requires_grad)

z = torch.matmul(x, w)+b
z_det = z.detach()
print(z_det.requires_grad)

inp = torch.eye(4, 5, requires_grad=True)
out = (inp+1).pow(2).t()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"First call\n{inp.grad}")
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nSecond call\n{inp.grad}")
inp.grad.zero_()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nCall after zeroing gradients\n{inp.grad}")

# Gradients of non-leaf tensors are kept only when asked for.
h = torch.matmul(x, w)
h.retain_grad()
(h.sigmoid() * torch.tensor([1.0, -1.0, 2.0])).sum().backward()
print([round(v, 6) for v in h.grad.tolist()], h.is_leaf, w.grad.shape)
torch.set_grad_enabled(False)
print((w * 2).requires_grad, torch.is_grad_enabled())
torch.set_grad_enabled(True)
print((w * 2).requires_grad, torch.is_grad_enabled())
