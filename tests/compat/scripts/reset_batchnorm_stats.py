"""Recomputing stale BatchNorm statistics on new data: every _BatchNorm gets reset_running_stats() and
momentum=None (a cumulative average), a pass over the data in train mode under no_grad, then eval().
Fine-tuning with frozen BatchNorm layers: eval() on them and requires_grad_(False) on their parameters."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(26)
model = nn.Sequential(
    nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
    nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
    nn.Flatten(), nn.Linear(4 * 6 * 6, 3), nn.BatchNorm1d(3),
)
with torch.no_grad():
    for param in model.parameters():
        param.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, param.shape).astype(np.float32)))

old_data = [torch.from_numpy(rng.standard_normal((8, 2, 6, 6)).astype(np.float32)) for _ in range(3)]
new_data = [torch.from_numpy(rng.standard_normal((8, 2, 6, 6)).astype(np.float32) * 3 + 2) for _ in range(4)]
model.train()
with torch.no_grad():
    for batch in old_data:
        model(batch)
print("stale:", [round(v, 4) for v in model[1].running_mean.tolist()], model[1].num_batches_tracked.item())


def reset_bn_stats(m):
    if isinstance(m, nn.modules.batchnorm._BatchNorm):
        m.reset_running_stats()
        m.momentum = None


print([type(m).__name__ for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)])
model.apply(reset_bn_stats)
print("reset:", model[1].running_mean.tolist(), model[1].running_var.tolist(), model[1].num_batches_tracked.item())
model.train()
with torch.no_grad():
    for batch in new_data:
        model(batch)
model.eval()

first = model[0]
with torch.no_grad():
    features = [first(batch) for batch in new_data]
mean_of_means = torch.stack([f.mean(dim=(0, 2, 3)) for f in features]).mean(0)
mean_of_vars = torch.stack([f.var(dim=(0, 2, 3), unbiased=True) for f in features]).mean(0)
print("recomputed:", [round(v, 4) for v in model[1].running_mean.tolist()], model[1].num_batches_tracked.item())
print("cumulative average of the batch statistics:", torch.allclose(model[1].running_mean, mean_of_means, atol=1e-5),
      torch.allclose(model[1].running_var, mean_of_vars, atol=1e-4))
print("running_var", [round(v, 4) for v in model[4].running_var.tolist()],
      [round(v, 4) for v in model[8].running_var.tolist()])

with torch.no_grad():
    outputs = model(new_data[0])
print("eval outputs", [round(v, 5) for v in outputs[0].tolist()])

# Fine-tuning with frozen BatchNorm: its statistics and parameters stay as they are.
model.train()
for m in model.modules():
    if isinstance(m, nn.BatchNorm2d):
        m.eval()
        m.requires_grad_(False)
trainable = [p for p in model.parameters() if p.requires_grad]
print(len(trainable), sum(p.numel() for p in trainable), model[1].training, model[8].training)
statistics = model[1].running_mean.clone()
optimizer = torch.optim.SGD(trainable, lr=0.01)
loss = model(new_data[1]).pow(2).mean()
loss.backward()
optimizer.step()
print(f"loss {loss.item():.5f}", torch.equal(statistics, model[1].running_mean), model[1].weight.grad)
