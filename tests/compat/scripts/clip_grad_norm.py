"""Gradient clipping in a training loop: clip_grad_norm_ returns the total norm before clipping and
scales the gradients to max_norm; clip_grad_value_ clamps each gradient element."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(14)
model = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 1))
with torch.no_grad():
    for param in model.parameters():
        param.copy_(torch.from_numpy(rng.uniform(-1, 1, param.shape).astype(np.float32)))
inputs = torch.from_numpy(rng.standard_normal((64, 3)).astype(np.float32)) * 5
targets = (inputs ** 2).sum(dim=1, keepdim=True)

optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.MSELoss()
for step in range(8):
    optimizer.zero_grad()
    loss = loss_fn(model(inputs), targets)
    loss.backward()
    total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    clipped = torch.sqrt(sum(p.grad.pow(2).sum() for p in model.parameters()))
    print(f"step {step}: loss {loss.item():.4f} norm before {total_norm.item():.4f} after {clipped.item():.6f}")
    optimizer.step()
print(type(total_norm).__name__, total_norm.dim())

optimizer.zero_grad()
loss_fn(model(inputs), targets).backward()
inf_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5, norm_type=float('inf'))
print(f"inf norm {inf_norm.item():.4f}, largest after {max(p.grad.abs().max().item() for p in model.parameters()):.6f}")

optimizer.zero_grad()
loss_fn(model(inputs), targets).backward()
nn.utils.clip_grad_value_(model.parameters(), clip_value=0.1)
print("clip_grad_value_:", max(p.grad.abs().max().item() for p in model.parameters()),
      sum((p.grad.abs() == 0.1).sum().item() for p in model.parameters()) > 0)

vector = nn.utils.parameters_to_vector(model.parameters())
print(vector.shape, f"{vector.sum().item():.5f}")
nn.utils.vector_to_parameters(vector * 0, model.parameters())
print(sum(p.abs().sum().item() for p in model.parameters()))
