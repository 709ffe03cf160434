"""A custom Dataset with __len__/__getitem__ and a transform, batched by DataLoader's default collation
(tuples, dicts, numbers and arrays become tensors) and by a collate_fn ("Datasets & DataLoaders")."""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset


class MeasurementsDataset(Dataset):
    """Rows of a numpy table: features, an integer label and a per-row weight."""

    def __init__(self, table, transform=None):
        self.table = table
        self.transform = transform

    def __len__(self):
        return len(self.table)

    def __getitem__(self, idx):
        if torch.is_tensor(idx):
            idx = idx.tolist()
        row = self.table[idx]
        features = row[:3].astype(np.float32)
        if self.transform:
            features = self.transform(features)
        return {"features": features, "label": int(row[3]), "weight": float(row[4])}


def scale(features):
    return features / 10.0


rng = np.random.default_rng(7)
table = np.column_stack([rng.integers(0, 50, (10, 3)), rng.integers(0, 3, 10), rng.uniform(0.5, 1.5, 10)])
dataset = MeasurementsDataset(table, transform=scale)
print(len(dataset), sorted(dataset[0].keys()))

loader = DataLoader(dataset, batch_size=4)
print(len(loader))
for i_batch, sample_batched in enumerate(loader):
    features, labels, weights = sample_batched["features"], sample_batched["label"], sample_batched["weight"]
    print(i_batch, features.size(), features.dtype, labels.dtype, weights.dtype)
    print("  features", [round(v, 4) for v in features.sum(dim=1).tolist()])
    print("  labels", labels.tolist(), "weights", [round(v, 5) for v in weights.tolist()])

train_features = next(iter(DataLoader(dataset, batch_size=3, drop_last=True)))["features"]
print(f"Feature batch shape: {train_features.size()}")

# Tuples of tensors from a TensorDataset; a collate_fn that pads variable-length sequences.
pairs = TensorDataset(torch.arange(12, dtype=torch.float32).reshape(6, 2), torch.tensor([0, 1, 0, 1, 1, 0]))
for x, y in DataLoader(pairs, batch_size=4):
    print(x.shape, y.tolist(), x.sum().item())


def pad_collate(batch):
    longest = max(len(seq) for seq in batch)
    padded = torch.zeros(len(batch), longest, dtype=torch.long)
    for i, seq in enumerate(batch):
        padded[i, :len(seq)] = torch.tensor(seq)
    return padded, torch.tensor([len(seq) for seq in batch])


sequences = [[3, 1, 4], [1, 5], [9, 2, 6, 5], [3]]
for padded, lengths in DataLoader(sequences, batch_size=2, collate_fn=pad_collate):
    print(padded.tolist(), lengths.tolist())
