"""One-hot targets with F.one_hot and a multi-label classifier trained with nn.BCEWithLogitsLoss (with
pos_weight), predictions by thresholding torch.sigmoid, and F.binary_cross_entropy on probabilities."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(17)
features = torch.tensor(rng.standard_normal((48, 6)), dtype=torch.float32)
labels = torch.tensor(rng.integers(0, 4, 48))
one_hot = F.one_hot(labels, num_classes=4)
print(one_hot.dtype, one_hot.shape, one_hot[:3].tolist(), F.one_hot(torch.tensor([2, 0])).tolist())
targets = one_hot.float()
targets[:, 0] = (features[:, 0] > 0).float()  # a second label on some rows: multi-label targets

model = nn.Linear(6, 4)
with torch.no_grad():
    model.weight.copy_(torch.tensor(rng.uniform(-0.3, 0.3, (4, 6)), dtype=torch.float32))
    model.bias.zero_()

criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.0, 2.0, 2.0, 2.0]))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
for epoch in range(30):
    optimizer.zero_grad()
    logits = model(features)
    loss = criterion(logits, targets)
    loss.backward()
    optimizer.step()
    if epoch % 10 == 9:
        predicted = (torch.sigmoid(logits) > 0.5).float()
        exact = (predicted == targets).all(dim=1).float().mean().item()
        print(f"epoch {epoch + 1}: loss {loss.item():.5f}, label accuracy "
              f"{(predicted == targets).float().mean().item():.4f}, exact-match {exact:.4f}")

with torch.no_grad():
    probabilities = torch.sigmoid(model(features))
    print(f"{F.binary_cross_entropy(probabilities, targets).item():.5f}",
          f"{F.binary_cross_entropy_with_logits(model(features), targets).item():.5f}",
          f"{nn.BCELoss(reduction='sum')(probabilities, targets).item():.4f}")
    per_element = nn.BCEWithLogitsLoss(reduction='none')(model(features), targets)
    print(per_element.shape, f"{per_element.mean().item():.5f}")
