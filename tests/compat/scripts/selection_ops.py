"""Selecting and ranking: where, clamp, topk, sort, argsort, gather, argmax/argmin, max/min along a dim,
index_select, nonzero and comparisons, with gradients through the selections."""
import numpy as np
import torch

rng = np.random.default_rng(15)
logits = torch.tensor(rng.standard_normal((4, 6)).round(3), dtype=torch.float32, requires_grad=True)
print(logits.argmax(dim=1).tolist(), logits.argmin(1).tolist(), torch.argmax(logits).item())

values, indices = torch.topk(logits, 3, dim=1)
print("topk", values.tolist(), indices.tolist())
values, indices = logits.topk(2, dim=0, largest=False)
print("smallest", values.tolist(), indices.tolist())
sorted_values, order = torch.sort(logits, dim=1, descending=True)
print("sort", order.tolist(), torch.equal(sorted_values[:, :3], torch.topk(logits, 3).values))
print("argsort", torch.argsort(logits[0]).tolist())

maxima = torch.max(logits, dim=1)
print("max", [round(v, 3) for v in maxima.values.tolist()], maxima.indices.tolist())
low, where_low = logits.min(0)
print("min", [round(v, 3) for v in low.tolist()], where_low.tolist(), torch.max(logits).item())
print("binary max", torch.max(logits[0], logits[1]).tolist())

targets = torch.tensor([[1], [0], [5], [2]])
picked = torch.gather(logits, 1, targets)
print("gather", picked.flatten().tolist(), logits.gather(0, torch.tensor([[0, 1, 2, 3, 0, 1]])).tolist())

clipped = logits.clamp(min=-0.5, max=0.5)
positive = torch.where(logits > 0, logits, torch.zeros_like(logits))
scaled = torch.where(logits > 0, logits, 0.1 * logits)
print(clipped[0].tolist(), positive[1].tolist(), scaled[2].tolist())
print(torch.clamp(logits, 0)[3].tolist(), logits.clamp(max=0)[3].tolist())

upstream = torch.tensor(rng.standard_normal((4, 6)), dtype=torch.float32)
loss = (picked.sum() + (values * 2).sum() + (clipped * upstream).sum() + (scaled * upstream).sum()
        + maxima.values.sum() + sorted_values[:, 0].sum())
loss.backward()
print("grad", [[round(v, 5) for v in row] for row in logits.grad.tolist()])

x = logits.detach()
print(torch.index_select(x, 0, torch.tensor([3, 0])).shape, x[x > 1].tolist())
print(torch.nonzero(x > 1).tolist(), (x > 1).any().item(), (x > -5).all().item(), (x > 1).sum().item())
print(torch.eq(x, x).all().item(), torch.ne(x[0], 0).tolist(), (x[0] >= 0).float().mean().item())
idx = torch.argmax(x, dim=1, keepdim=True)
print(idx.shape, x.max(dim=1, keepdim=True)[0].shape)
