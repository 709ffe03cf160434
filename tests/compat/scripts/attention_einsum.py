"""Scaled dot-product attention written out with einsum and with bmm, a causal mask from triu and
masked_fill(-inf), checked against F.scaled_dot_product_attention (is_causal and attn_mask), with gradients."""
import math

import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(16)
batch, heads, seq, dim = 2, 3, 5, 4
q = torch.tensor(rng.standard_normal((batch, heads, seq, dim)), dtype=torch.float32, requires_grad=True)
k = torch.tensor(rng.standard_normal((batch, heads, seq, dim)), dtype=torch.float32, requires_grad=True)
v = torch.tensor(rng.standard_normal((batch, heads, seq, dim)), dtype=torch.float32, requires_grad=True)


def attention(q, k, v, causal=False):
    scores = torch.einsum('bhqd,bhkd->bhqk', q, k) / math.sqrt(q.size(-1))
    if causal:
        mask = torch.triu(torch.ones(q.size(-2), k.size(-2), dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(mask, float('-inf'))
    weights = F.softmax(scores, dim=-1)
    return torch.einsum('bhqk,bhkd->bhqd', weights, v), weights


out, weights = attention(q, k, v, causal=True)
print(out.shape, [round(w, 6) for w in weights[0, 0, 1].tolist()], weights[0, 0, 0, 1:].sum().item())

# The same with bmm on (batch * heads, seq, dim) matrices.
q3, k3, v3 = (t.reshape(batch * heads, seq, dim) for t in (q, k, v))
scores = torch.bmm(q3, k3.transpose(1, 2)) / math.sqrt(dim)
bmm_out = torch.bmm(torch.softmax(scores, dim=-1), v3).view(batch, heads, seq, dim)
print("einsum == bmm:", torch.allclose(attention(q, k, v)[0], bmm_out, atol=1e-6))

fused = F.scaled_dot_product_attention(q, k, v, is_causal=True)
print("is_causal matches:", torch.allclose(fused, out, atol=1e-6))
keep = torch.tril(torch.ones(seq, seq, dtype=torch.bool))
print("boolean attn_mask matches:", torch.allclose(F.scaled_dot_product_attention(q, k, v, attn_mask=keep), out,
                                                    atol=1e-6))
bias = torch.zeros(seq, seq).masked_fill(~keep, float('-inf'))
print("additive attn_mask matches:", torch.allclose(F.scaled_dot_product_attention(q, k, v, attn_mask=bias), out,
                                                     atol=1e-6))

upstream = torch.tensor(rng.standard_normal(out.shape), dtype=torch.float32)
(out * upstream).sum().backward()
manual = [t.grad.clone() for t in (q, k, v)]
for t in (q, k, v):
    t.grad = None
(fused * upstream).sum().backward()
print("same gradients:", all(torch.allclose(a, t.grad, atol=1e-5) for a, t in zip(manual, (q, k, v))))
print("grad q", [round(g, 5) for g in q.grad[1, 2, 3].tolist()], f"{v.grad.abs().sum().item():.5f}")

# torch.einsum for other common contractions
a = torch.arange(6.0).reshape(2, 3)
b = torch.arange(12.0).reshape(3, 4)
print(torch.einsum('ij,jk->ik', a, b).tolist(), torch.einsum('ij->ji', a).shape, torch.einsum('ij->', a).item())
print(torch.einsum('i,i->', a[0], a[1]).item(), torch.einsum('i,j->ij', a[0], a[1]).tolist())
print(torch.einsum('bij,bjk->bik', a[None], b[None]).shape, torch.einsum('ii->i', torch.eye(3)).tolist())
