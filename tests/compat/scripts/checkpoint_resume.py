"""A general checkpoint (epoch, model and optimizer state_dicts, loss) saved mid-training and resumed
into fresh objects: the resumed run continues exactly as the uninterrupted one ("Saving and loading a
general checkpoint")."""
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

rng = np.random.default_rng(8)
inputs = torch.from_numpy(rng.standard_normal((32, 5)).astype(np.float32))
targets = torch.from_numpy(rng.standard_normal((32, 1)).astype(np.float32))
initial = {name: rng.uniform(-0.4, 0.4, shape).astype(np.float32)
           for name, shape in [("0.weight", (8, 5)), ("0.bias", (8,)), ("2.weight", (1, 8)), ("2.bias", (1,))]}


def make_model():
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
    model.load_state_dict({name: torch.from_numpy(value) for name, value in initial.items()})
    return model


def train(model, optimizer, scheduler, epochs):
    losses = []
    for _ in range(epochs):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return losses


model = make_model()
optimizer = optim.Adam(model.parameters(), lr=0.05, betas=(0.8, 0.95), weight_decay=1e-3)
scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
uninterrupted = train(model, optimizer, scheduler, 12)
print("uninterrupted:", [round(loss, 6) for loss in uninterrupted])

model = make_model()
optimizer = optim.Adam(model.parameters(), lr=0.05, betas=(0.8, 0.95), weight_decay=1e-3)
scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
first_half = train(model, optimizer, scheduler, 6)
PATH = "checkpoint.pt"
torch.save({
    'epoch': 6,
    'model_state_dict': model.state_dict(),
    'optimizer_state_dict': optimizer.state_dict(),
    'scheduler_state_dict': scheduler.state_dict(),
    'loss': first_half[-1],
}, PATH)

model = make_model()
optimizer = optim.Adam(model.parameters(), lr=0.05, betas=(0.8, 0.95), weight_decay=1e-3)
scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
checkpoint = torch.load(PATH, weights_only=True)
model.load_state_dict(checkpoint['model_state_dict'])
optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
scheduler.load_state_dict(checkpoint['scheduler_state_dict'])
epoch = checkpoint['epoch']
loss = checkpoint['loss']
print(f"resuming after epoch {epoch}, loss {loss:.6f}, lr {scheduler.get_last_lr()[0]}")
print("optimizer state:", sorted(optimizer.state_dict()['state'][0].keys()),
      int(optimizer.state_dict()['state'][0]['step']))

model.train()
second_half = train(model, optimizer, scheduler, 6)
print("resumed:      ", [round(loss, 6) for loss in first_half + second_half])
print("same as uninterrupted:", np.allclose(first_half + second_half, uninterrupted, rtol=1e-6, atol=0))
