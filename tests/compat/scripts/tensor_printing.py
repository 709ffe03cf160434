"""What printing a tensor shows, as users read it in every tutorial: reprs of float, integer, bool and
float64 tensors, whole-number floats, small and large magnitudes in scientific notation, nan and inf,
scalars, empty tensors, long tensors summarised with '...', requires_grad and grad_fn, set_printoptions,
str of shapes and dtypes, f-string formats of one-element tensors, tolist and item."""
import numpy as np
import torch

rng = np.random.default_rng(2)
print(torch.tensor([1.5, -2.25, 3.0]))
print(torch.tensor([1.0, 2.0, 3.0]))
print(torch.tensor([[1, 2], [3, 40]]))
print(torch.tensor([True, False]))
print(torch.tensor([0.1, 0.2], dtype=torch.float64))
print(torch.tensor([1e-8, 1.0, 1e6]))
print(torch.tensor([123456.0, 0.5]))
print(torch.tensor([float('nan'), float('inf'), -float('inf'), 1.0]))
print(torch.tensor(3.25), torch.tensor(7), torch.tensor([]))
print(torch.zeros(2, 0, 3))
print(torch.arange(2000.0))
print(torch.arange(12).reshape(3, 4) * 1000)
print(torch.from_numpy(rng.normal(size=(2, 3, 4)).astype(np.float32)))

w = torch.ones(3, requires_grad=True)
print(w)
print(w * 2)
print((w * 2).sum())
print(w.detach(), w.data)
torch.set_printoptions(precision=2)
print(torch.tensor([3.14159, 2.71828]))
torch.set_printoptions(profile='default')
print(torch.tensor([3.14159, 2.71828]))

x = torch.from_numpy(rng.normal(size=(4, 5)).astype(np.float32))
print(x.shape, x.size(), x.size(1), x.dtype, x.device, x.ndim, x.dim(), x.numel())
print(str(x.shape), str(torch.int64), repr(torch.float32), x.shape == (4, 5), list(x.shape))
loss = x.pow(2).mean()
print(f"loss: {loss:.4f}", f"{loss:>7f}", f"{loss.item():.3e}", "{:.2f}".format(x[0, 0]))
print(x[0].tolist(), torch.tensor([[1, 2], [3, 4]]).tolist(), x.sum().item(), type(torch.tensor(2).item()))
