"""The same model trained with torch.optim.RMSprop ("Learning PyTorch with Examples": PyTorch: optim)."""
import math

import numpy as np
import torch

x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)

p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)

model = torch.nn.Sequential(
    torch.nn.Linear(3, 1),
    torch.nn.Flatten(0, 1)
)
rng = np.random.default_rng(4)
with torch.no_grad():
    model[0].weight.copy_(torch.tensor(rng.uniform(-0.5, 0.5, (1, 3)), dtype=torch.float32))
    model[0].bias.fill_(0.1)
loss_fn = torch.nn.MSELoss(reduction='sum')

learning_rate = 1e-3
optimizer = torch.optim.RMSprop(model.parameters(), lr=learning_rate)
for t in range(400):
    y_pred = model(xx)

    loss = loss_fn(y_pred, y)
    if t == 0:
        first_loss = loss.item()
    if t % 50 == 49:
        print(t, loss.item())

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

linear_layer = model[0]
print(f'Result: y = {linear_layer.bias.item()} + {linear_layer.weight[:, 0].item()} x + '
      f'{linear_layer.weight[:, 1].item()} x^2 + {linear_layer.weight[:, 2].item()} x^3')
print(sorted(optimizer.state_dict()['state'][0].keys()), optimizer.state_dict()['param_groups'][0]['alpha'])
assert loss.item() < first_loss / 5
