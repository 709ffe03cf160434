"""Per-parameter options (param groups with their own lr), weight decay only for weights, and several
optimizers on one small regression from the same start: SGD with Nesterov momentum, Adam, AdamW, RMSprop,
Adagrad."""
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

rng = np.random.default_rng(30)
inputs = torch.tensor(rng.standard_normal((40, 3)), dtype=torch.float32)
targets = inputs @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
initial = [rng.uniform(-0.5, 0.5, shape).astype(np.float32) for shape in [(6, 3), (6,), (1, 6), (1,)]]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.base = nn.Sequential(nn.Linear(3, 6), nn.Tanh())
        self.classifier = nn.Linear(6, 1)
        with torch.no_grad():
            for param, value in zip(self.parameters(), initial):
                param.copy_(torch.from_numpy(value))

    def forward(self, x):
        return self.classifier(self.base(x))


def fit(model, optimizer, steps=20):
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
    return loss.item()


model = Net()
optimizer = optim.SGD([
    {'params': model.base.parameters()},
    {'params': model.classifier.parameters(), 'lr': 1e-3}
], lr=1e-2, momentum=0.9)
print(len(optimizer.param_groups), [g['lr'] for g in optimizer.param_groups], optimizer.param_groups[1]['momentum'])
print(f"param groups: {fit(model, optimizer):.6f}")

model = Net()
decay = [p for name, p in model.named_parameters() if name.endswith("weight")]
no_decay = [p for name, p in model.named_parameters() if name.endswith("bias")]
optimizer = optim.AdamW([{'params': decay, 'weight_decay': 0.1}, {'params': no_decay, 'weight_decay': 0.0}],
                        lr=0.02)
print(f"AdamW, decay on weights only: {fit(model, optimizer):.6f}",
      [round(v, 5) for v in model.classifier.weight.flatten().tolist()])
optimizer.add_param_group({'params': [nn.Parameter(torch.zeros(2))], 'lr': 0.5})
new_group = optimizer.param_groups[2]
print(new_group['lr'], new_group['weight_decay'], new_group['betas'], new_group['eps'], new_group['amsgrad'])

for name, make in [
    ("SGD nesterov", lambda p: optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True)),
    ("Adam", lambda p: optim.Adam(p, lr=0.02)),
    ("Adam amsgrad", lambda p: optim.Adam(p, lr=0.02, amsgrad=True)),
    ("RMSprop centered", lambda p: optim.RMSprop(p, lr=0.01, momentum=0.5, centered=True)),
    ("Adagrad", lambda p: optim.Adagrad(p, lr=0.1)),
]:
    model = Net()
    print(f"{name}: {fit(model, make(model.parameters())):.6f}")
