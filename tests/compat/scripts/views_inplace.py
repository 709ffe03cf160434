"""Views share memory with their base (view, slicing, transpose, from_numpy and numpy()), in-place methods
write through them, masked_fill and item assignment with masks, indices and slices."""
import numpy as np
import torch

x = torch.arange(12, dtype=torch.float32)
v = x.view(3, 4)
row = v[1]
col = v[:, 2]
row.add_(100)
col.mul_(-1)
print(x.tolist())
print(v.shape, row.shape, col.shape, v.is_contiguous(), v.t().is_contiguous(), v.t().contiguous().is_contiguous())
print(v.t()[2].tolist(), v.transpose(0, 1).shape, v.stride(), v.t().stride())

r = v.reshape(4, 3)
r[0, 0] = -7
print("reshape of a contiguous tensor is a view:", x[0].item() == -7)
c = v.clone()
c.zero_()
print("clone is a copy:", v.sum().item(), c.sum().item())

a = np.arange(6, dtype=np.float32)
t = torch.from_numpy(a)
np.add(a, 1, out=a)
t.mul_(2)
print("from_numpy shares memory:", a.tolist(), t.tolist())
n = t.numpy()
n[0] = 42
print("numpy() shares memory:", t[0].item())

scores = torch.tensor([[0.5, -1.0, 2.0], [3.0, 0.0, -0.5]])
mask = scores < 0
print(scores.masked_fill(mask, 0.0).tolist(), scores.tolist())
scores.masked_fill_(mask, -1e9)
print(scores.tolist())
scores[scores > 1] = 1.0
print(scores.tolist())
scores[0] = torch.tensor([7.0, 8.0, 9.0])
scores[:, 1] = 0
scores[1, [0, 2]] = torch.tensor([-1.0, -2.0])
print(scores.tolist())

w = torch.ones(2, 3, requires_grad=True)
h = w * 2
h[0, 1] = 0.0  # item assignment into a non-leaf is recorded by autograd
h.sum().backward()
print("gradient through setitem:", w.grad.tolist())

y = torch.zeros(2, 2)
y.add_(torch.ones(2), alpha=3).sub_(1).div_(4).clamp_(max=0.4)
print(y.tolist(), y.unsqueeze(0).squeeze().shape, y.unsqueeze_(1).shape)
z = torch.ones(4)
z[1:3] += 5
z[::2] *= torch.tensor([10.0, 20.0])
print(z.tolist(), z.flip(0).tolist(), torch.cat([z, z[:2]]).tolist())
e = torch.ones(3, 1).expand(3, 4)
print(e.shape, e.stride(), torch.ones(1, 4).expand_as(e).sum().item())
