"""Random numbers as training scripts use them, checked by what holds in any library (their streams
differ): torch.manual_seed makes runs repeat, a torch.Generator gives its own repeatable stream, and
rand, randn, randint, randperm, rand_like, randn_like, randint_like, normal, bernoulli, multinomial and
dropout keep their shapes, dtypes, ranges and rough statistics."""
import torch
import torch.nn as nn

torch.manual_seed(0)
first = torch.rand(3), torch.randn(2, 2), torch.randint(0, 10, (5,))
torch.manual_seed(0)
again = torch.rand(3), torch.randn(2, 2), torch.randint(0, 10, (5,))
print(all(torch.equal(a, b) for a, b in zip(first, again)))

g = torch.Generator().manual_seed(42)
a = torch.randn(4, generator=g)
g.manual_seed(42)
print(torch.equal(a, torch.randn(4, generator=g)))

x = torch.rand(1000, 3)
print(x.shape, x.dtype, bool((x >= 0).all()), bool((x < 1).all()), abs(x.mean().item() - 0.5) < 0.05)
n = torch.randn(20000)
print(abs(n.mean().item()) < 0.05, abs(n.std().item() - 1) < 0.05)
i = torch.randint(3, 8, (2000,))
print(i.dtype, i.min().item(), i.max().item(), torch.randint(5, (2, 3)).shape)
p = torch.randperm(10)
print(p.dtype, sorted(p.tolist()) == list(range(10)))
print(torch.rand_like(x).shape, torch.randn_like(n).dtype, torch.randint_like(i, 2).max().item() <= 1)
m = torch.normal(mean=torch.full((5000,), 3.0), std=2.0)
print(abs(m.mean().item() - 3) < 0.15, abs(m.std().item() - 2) < 0.15)
b = torch.bernoulli(torch.full((4000,), 0.25))
print(b.dtype, set(b.unique().tolist()) <= {0.0, 1.0}, abs(b.mean().item() - 0.25) < 0.04)
draws = torch.multinomial(torch.tensor([0.1, 0.0, 0.9]), 500, replacement=True)
print(draws.dtype, 1 not in draws.tolist(), (draws == 2).sum().item() > 400)
print(sorted(torch.multinomial(torch.ones(6), 6).tolist()) == list(range(6)))

dropout = nn.Dropout(p=0.3)
ones = torch.ones(10000)
dropped = dropout(ones)
kept = dropped != 0
print(abs(kept.float().mean().item() - 0.7) < 0.03, torch.allclose(dropped[kept], torch.tensor(1 / 0.7)))
dropout.eval()
print(torch.equal(dropout(ones), ones))
