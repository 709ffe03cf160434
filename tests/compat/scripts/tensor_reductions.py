"""Reductions as tutorials and training scripts write them: max/min along a dim (values and indices),
binary max/min, prod, cumsum, cumprod, norm, logsumexp, var/std with unbiased= and correction=, numpy's
axis=/keepdims= spellings, amax, count_nonzero, unique with counts, bincount, and gradients through
logsumexp, norm, std and max with a random upstream gradient."""
import numpy as np
import torch

rng = np.random.default_rng(11)
x = torch.from_numpy(rng.normal(size=(3, 4)).astype(np.float32))

values, indices = torch.max(x, 1)
print(values, indices)
result = x.min(dim=0, keepdim=True)
print(result.values, result.indices)
print(torch.max(x), torch.min(x), torch.max(x, torch.zeros(3, 4)))
print(x.argmax(dim=1), x.argmin(1), x.amax(dim=(0, 1)))
print(x.prod(1), x.cumsum(dim=1), x.cumprod(0))
print(x.norm(), x.norm(p=1, dim=1), torch.norm(x, dim=0), x.norm(dim=1, keepdim=True).shape)
print(torch.logsumexp(x, dim=1), x.logsumexp(0))
print(x.var(), x.var(unbiased=False), x.std(dim=0, unbiased=True), x.std(1, correction=0))
print(x.var(dim=1, keepdim=True).shape, x.mean(dim=(0, 1)))
print(x.sum(axis=0), x.sum(axis=1, keepdims=True), x.mean(axis=0), x.max(axis=1).values)

labels = torch.tensor([2, 0, 2, 1, 2, 0, 3])
print(torch.count_nonzero(labels), torch.bincount(labels), labels.bincount(minlength=6))
classes, counts = torch.unique(labels, return_counts=True)
print(classes, counts, labels.unique(sorted=True))

w = x.clone().requires_grad_(True)
upstream = [torch.from_numpy(rng.normal(size=shape).astype(np.float32)) for shape in [(3,), (4,), (3,), (3,)]]
outputs = [torch.logsumexp(w, dim=1), w.norm(dim=0), w.std(dim=1), w.max(dim=1).values]
for out, grad in zip(outputs, upstream):
    (out * grad).sum().backward()
print(w.grad)
