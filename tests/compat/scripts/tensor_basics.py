"""The Tensors tutorial: creating tensors from data, numpy and other tensors, their attributes, indexing,
joining, arithmetic, single-element tensors, in-place operations and the bridge with numpy."""
import numpy as np
import torch

data = [[1, 2], [3, 4]]
x_data = torch.tensor(data)
np_array = np.array(data)
x_np = torch.from_numpy(np_array)
print(x_data)
print(x_np.dtype, torch.equal(x_data, x_np))

x_ones = torch.ones_like(x_data)  # x_data's shape and dtype
print(f"Ones Tensor: \n {x_ones} \n")
x_rand = torch.rand_like(x_data, dtype=torch.float)  # x_data's shape, another dtype
print(f"Random Tensor: {x_rand.shape} {x_rand.dtype}, in [0, 1): {bool(((x_rand >= 0) & (x_rand < 1)).all())}\n")

shape = (2, 3,)
ones_tensor = torch.ones(shape)
zeros_tensor = torch.zeros(shape)
print(f"Ones Tensor: \n {ones_tensor} \n")
print(f"Zeros Tensor: \n {zeros_tensor}")

tensor = torch.rand(3, 4)
print(f"Shape of tensor: {tensor.shape}")
print(f"Datatype of tensor: {tensor.dtype}")
print(f"Device tensor is stored on: {tensor.device}")

tensor = torch.ones(4, 4)
print(f"First row: {tensor[0]}")
print(f"First column: {tensor[:, 0]}")
print(f"Last column: {tensor[..., -1]}")
tensor[:,1] = 0
print(tensor)

t1 = torch.cat([tensor, tensor, tensor], dim=1)
print(t1.shape, torch.stack([tensor, tensor]).shape)

# This computes the matrix multiplication between two tensors. y1, y2, y3 will have the same value
tensor = torch.arange(16, dtype=torch.float32).reshape(4, 4)
y1 = tensor @ tensor.T
y2 = tensor.matmul(tensor.T)
y3 = torch.rand_like(y1)
torch.matmul(tensor, tensor.T, out=y3)
print(y1.tolist(), torch.equal(y1, y2), torch.equal(y1, y3))

# This computes the element-wise product. z1, z2, z3 will have the same value
z1 = tensor * tensor
z2 = tensor.mul(tensor)
z3 = torch.rand_like(tensor)
torch.mul(tensor, tensor, out=z3)
print(z1[1].tolist(), torch.equal(z1, z2), torch.equal(z1, z3))

agg = tensor.sum()
agg_item = agg.item()
print(agg_item, type(agg_item))

print(f"{tensor} \n")
tensor.add_(5)
print(tensor)

t = torch.ones(5)
print(f"t: {t}")
n = t.numpy()
print(f"n: {n}")
t.add_(1)
print(f"t: {t}")
print(f"n: {n}")

n = np.ones(5)
t = torch.from_numpy(n)
np.add(n, 1, out=n)
print(f"t: {t}")
print(f"n: {n}")

print(torch.zeros(2, 2, dtype=torch.int64), torch.tensor([1.5, -2.25], requires_grad=True))
print(torch.tensor(3.5), torch.tensor([True, False]), torch.tensor([1, 2], dtype=torch.float64))
print(torch.eye(3).tolist(), torch.arange(0, 1, 0.25).tolist(), torch.full((2,), 7).tolist())
print(torch.linspace(0, 1, steps=5), torch.empty(3, 2).shape, x_data.numel(), x_data.ndim, x_data.size(1))
