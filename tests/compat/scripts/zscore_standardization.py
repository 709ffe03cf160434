# compat: requires=sklearn
"""Z-score standardisation of features on very different scales (house area in m^2, number of rooms): by
hand with mean and std(unbiased=False), against scikit-learn's StandardScaler and numpy."""
import numpy as np
import torch
from sklearn.preprocessing import StandardScaler

data = np.array([
    [50, 2],
    [80, 3],
    [120, 3],
    [200, 4],
    [300, 5],
    [450, 5],
])
x = torch.tensor(data, dtype=torch.float32)
print(x.dtype, x.shape)

mean = x.mean(dim=0)
std = x.std(dim=0, unbiased=False)  # the population standard deviation, as numpy's np.std and sklearn
normalized = (x - mean) / std
print("mean", mean.tolist(), "std", [round(s, 4) for s in std.tolist()])
for row in normalized:
    print(" ".join(f"{value:.6f}" for value in row.tolist()))

scaled = StandardScaler().fit_transform(data)
print("same as StandardScaler:", np.allclose(normalized.numpy(), scaled, atol=1e-6))
print("same as numpy:", np.allclose(normalized.numpy(), (data - data.mean(0)) / data.std(0), atol=1e-6))
print("mean 0, std 1:", [round(v, 6) + 0.0 for v in normalized.mean(0).tolist()],
      [round(v, 6) for v in normalized.std(0, unbiased=False).tolist()])

# The sample standard deviation (unbiased, PyTorch's default) is larger by sqrt(n / (n - 1)).
print([round(v, 4) for v in x.std(dim=0).tolist()], [round(v, 4) for v in x.std(dim=0, correction=1).tolist()],
      round((x.std(0) / std)[0].item(), 6), round((6 / 5) ** 0.5, 6))
print(f"{x.var(0, unbiased=False)[0].item():.2f} {torch.var(x, dim=0)[1].item():.4f}")

# Statistics from the training rows applied to new rows, as a scaler's transform does.
new = torch.tensor([[100.0, 3.0], [400.0, 4.0]])
print([[round(v, 5) for v in row] for row in ((new - mean) / std).tolist()])
