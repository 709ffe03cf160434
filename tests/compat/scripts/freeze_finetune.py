"""Transfer learning: freeze a "pretrained" backbone with requires_grad_(False), replace the head, give the
optimizer only the trainable parameters, and check what changed; named_parameters, state_dict loading with
strict=False, and counting parameters."""
import numpy as np
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU())
        self.head = nn.Linear(8, classes)

    def forward(self, x):
        return self.head(self.backbone(x))


rng = np.random.default_rng(31)
pretrained = Classifier(10)
with torch.no_grad():
    for param in pretrained.parameters():
        param.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, param.shape).astype(np.float32)))
state = pretrained.state_dict()
print(list(state.keys()))

model = Classifier(10)
model.load_state_dict(state)
model.head = nn.Linear(8, 3)  # a new task with three classes
with torch.no_grad():
    model.head.weight.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, (3, 8)).astype(np.float32)))
    model.head.bias.zero_()
for param in model.backbone.parameters():
    param.requires_grad = False

print(sum(p.numel() for p in model.parameters()), sum(p.numel() for p in model.parameters() if p.requires_grad))
print([name for name, p in model.named_parameters() if p.requires_grad])

optimizer = torch.optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), lr=0.1, momentum=0.9)
inputs = torch.from_numpy(rng.standard_normal((30, 4)).astype(np.float32))
labels = torch.from_numpy(rng.integers(0, 3, 30))
backbone_before = [p.clone() for p in model.backbone.parameters()]
for step in range(10):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(inputs), labels)
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.6f}", model.backbone[0].weight.grad is None)
print("backbone unchanged:", all(torch.equal(a, b) for a, b in zip(backbone_before, model.backbone.parameters())))

# Unfreeze the last backbone layer with a smaller learning rate.
model.backbone[2].requires_grad_(True)
optimizer.add_param_group({'params': model.backbone[2].parameters(), 'lr': 0.01})
for step in range(5):
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(inputs), labels).backward()
    optimizer.step()
print("last backbone layer moved:", not torch.equal(backbone_before[2], model.backbone[2].weight),
      "first did not:", torch.equal(backbone_before[0], model.backbone[0].weight))

# Loading the old checkpoint into the new model: the head's shape differs, so it is left out.
model = Classifier(3)
result = model.load_state_dict({k: v for k, v in state.items() if not k.startswith("head")}, strict=False)
print(result.missing_keys, result.unexpected_keys)
print(torch.equal(model.backbone[0].weight, pretrained.backbone[0].weight))
