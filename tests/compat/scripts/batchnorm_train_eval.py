"""BatchNorm in train mode normalises with the batch's statistics and updates running estimates
(momentum 0.1, unbiased variance); in eval mode it uses the running estimates, so a sample's output no
longer depends on the rest of its batch. no_grad() does not stop the updates; only eval() does."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(25)
batches = [torch.tensor(rng.standard_normal((16, 4)) * [1, 2, 3, 4] + [0, 1, -1, 5], dtype=torch.float32)
           for _ in range(5)]

bn = nn.BatchNorm1d(4)
print(bn.training, bn.momentum, bn.running_mean.tolist(), bn.running_var.tolist())
running_mean, running_var = torch.zeros(4), torch.ones(4)
for x in batches:
    out = bn(x)
    running_mean = 0.9 * running_mean + 0.1 * x.mean(0)
    running_var = 0.9 * running_var + 0.1 * x.var(0, unbiased=True)
    batch_stats = (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + bn.eps)
    assert torch.allclose(out, batch_stats, atol=1e-5)
print("running_mean", [round(v, 5) for v in bn.running_mean.tolist()])
print("running_var ", [round(v, 5) for v in bn.running_var.tolist()])
print("== the update rule:", torch.allclose(bn.running_mean, running_mean, atol=1e-6),
      torch.allclose(bn.running_var, running_var, atol=1e-5), bn.num_batches_tracked.item())

x = batches[0]
print("train mode: a sample depends on its batch:", not torch.allclose(bn(x)[:4], bn(x[:4]), atol=1e-3))
before = bn.running_mean.clone()
with torch.no_grad():
    bn(x)
print("no_grad still updates the statistics:", not torch.equal(before, bn.running_mean))

model = nn.Sequential(nn.Linear(4, 4), bn)
print(model.eval() is model, model.training, bn.training)
frozen = bn.running_mean.clone()
out = model(x)
expected = (model[0](x) - bn.running_mean) / torch.sqrt(bn.running_var + bn.eps) * bn.weight + bn.bias
print("eval mode uses the running statistics:", torch.allclose(out, expected, atol=1e-5),
      torch.equal(frozen, bn.running_mean))
print("eval mode: a sample does not depend on its batch:", torch.allclose(model(x)[:4], model(x[:4]), atol=1e-6))
print("a single sample in eval mode:", model(x[:1]).shape)
model.train()
try:
    model(x[:1])
except ValueError as error:
    print("a single sample in train mode:", type(error).__name__)

no_tracking = nn.BatchNorm1d(4, track_running_stats=False).eval()
print("without running statistics eval uses the batch:", no_tracking.running_mean,
      torch.allclose(no_tracking(x), (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + 1e-5), atol=1e-5))

# Small batches give noisy statistics: the spread of the batch means over the same data.
data = torch.tensor(rng.standard_normal((64, 1)), dtype=torch.float32)
for size in (2, 8, 32):
    means = torch.stack([chunk.mean() for chunk in data.split(size)])
    print(f"batch size {size:2d}: batch means spread {means.std().item():.4f}")
