"""dtypes as a tutorial reader meets them: defaults, conversions (.float(), .long(), .to(), .type()),
PyTorch's promotion rules for mixed integer/float and tensor/scalar arithmetic, and integer division."""
import numpy as np
import torch

i = torch.tensor([1, 2, 3])
f = torch.tensor([0.5, 1.5, 2.5])
d = torch.tensor([1.0, 2.0], dtype=torch.float64)
print(i.dtype, f.dtype, d.dtype, torch.get_default_dtype(), torch.tensor(np.arange(3)).dtype,
      torch.tensor(np.ones(2)).dtype, torch.from_numpy(np.ones(2, dtype=np.float32)).dtype)
print((i + f).dtype, (i * 2).dtype, (i * 2.5).dtype, (i / 2).dtype, (f + d[0]).dtype, (f + d.sum()).dtype)
print((i + True).dtype, (torch.tensor([True]) + torch.tensor([True])).dtype, (f * torch.tensor(2)).dtype)
print((i / 2).tolist(), (i // 2).tolist(), (i % 2).tolist(), (-i // 2).tolist(), (i ** 2).tolist(), (2 ** i).tolist())

print(i.float().dtype, f.long().tolist(), f.int().dtype, f.double().dtype, f.half().dtype, f.bool().tolist())
print(i.to(torch.float32).dtype, f.to(dtype=torch.int64).tolist(), i.type(torch.float64).dtype, f.type_as(d).dtype)
print(torch.tensor([-1.7, 1.7]).long().tolist(), torch.tensor([2.5, 3.5, -2.5]).round().tolist())
print(i.is_floating_point(), f.is_floating_point(), i.element_size(), d.element_size(), f.dtype == torch.float)
print(torch.float32, torch.int64, torch.float, torch.long, torch.double, torch.bool, torch.uint8)

counts = torch.zeros(3, dtype=torch.long)
counts += torch.tensor([1, 0, 2])
print(counts.tolist(), counts.dtype)
mixed = torch.zeros(3)
mixed += i  # an in-place op keeps the left-hand dtype
print(mixed.tolist(), mixed.dtype)
try:
    counts += f
except RuntimeError as error:
    print("float into long in place:", type(error).__name__)

mean_of_ints = i.float().mean()
print(mean_of_ints.item(), i.sum().item(), type(i.sum().item()).__name__, type(f.sum().item()).__name__)
print(torch.tensor(7).item() // 2, float(torch.tensor(2.5)), int(torch.tensor(3.9)), bool(torch.tensor(0)))
accuracy = (torch.tensor([1, 0, 1, 1]) == torch.tensor([1, 1, 1, 0])).sum().item() / 4
print(accuracy, (torch.tensor([1, 0, 1, 1]) == torch.tensor([1, 1, 1, 0])).float().mean().item())
