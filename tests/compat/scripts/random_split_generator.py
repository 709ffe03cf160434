"""random_split with a seeded Generator, Subsets, and a shuffling DataLoader with its own generator: the
split and the order are random, so this checks what must hold in any library (sizes, disjointness,
every sample once per epoch, the same draws from the same seed) rather than the draws themselves."""
import numpy as np
import torch
from torch.utils.data import DataLoader, Subset, TensorDataset, random_split

features = torch.from_numpy(np.arange(100, dtype=np.float32).reshape(50, 2))
labels = torch.arange(50) % 5
dataset = TensorDataset(features, labels)

train_set, val_set, test_set = random_split(dataset, [0.6, 0.2, 0.2], generator=torch.Generator().manual_seed(42))
print(len(train_set), len(val_set), len(test_set), type(train_set).__name__)
indices = set(train_set.indices) | set(val_set.indices) | set(test_set.indices)
print("disjoint and complete:", len(indices) == 50 and sorted(indices) == list(range(50)))

again = random_split(dataset, [0.6, 0.2, 0.2], generator=torch.Generator().manual_seed(42))
print("same seed, same split:", [list(s.indices) for s in again] == [list(train_set.indices), list(val_set.indices),
                                                                     list(test_set.indices)])
other = random_split(dataset, [30, 10, 10], generator=torch.Generator().manual_seed(43))
print("other seed, other split:", list(other[0].indices) != list(train_set.indices))

x, y = train_set[0]
print("a subset item is a dataset item:", torch.equal(x, features[train_set.indices[0]]),
      y.item() == x[0].item() / 2 % 5)

first_five = Subset(dataset, range(5))
print(len(first_five), first_five[4][1].item())

g = torch.Generator()
g.manual_seed(0)
loader = DataLoader(train_set, batch_size=8, shuffle=True, generator=g)
epochs = []
for epoch in range(2):
    order = []
    for xb, yb in loader:
        order.extend((xb[:, 0] / 2).long().tolist())
    epochs.append(order)
print("batches per epoch:", len(loader))
print("every sample once per epoch:", all(sorted(order) == sorted(train_set.indices) for order in epochs))
print("epochs shuffled differently:", epochs[0] != epochs[1])

g.manual_seed(0)
replay = [(xb[:, 0] / 2).long().tolist() for xb, _ in loader]
print("reseeding replays the order:", sum(replay, []) == epochs[0])
