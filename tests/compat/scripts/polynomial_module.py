"""A custom nn.Module with nn.Parameters and SGD ("Learning PyTorch with Examples": PyTorch: Custom nn Modules)."""
import math

import numpy as np
import torch


class Polynomial3(torch.nn.Module):
    def __init__(self, start):
        """Four scalar parameters, from the given starting values (the tutorial draws them with torch.randn)."""
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor(start[0]))
        self.b = torch.nn.Parameter(torch.tensor(start[1]))
        self.c = torch.nn.Parameter(torch.tensor(start[2]))
        self.d = torch.nn.Parameter(torch.tensor(start[3]))

    def forward(self, x):
        return self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3

    def string(self):
        return f'y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + {self.d.item()} x^3'


x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)

model = Polynomial3(np.random.default_rng(5).standard_normal(4).astype(np.float32).tolist())
print([name for name, _ in model.named_parameters()], model.a.dtype, model.a.shape)

criterion = torch.nn.MSELoss(reduction='sum')
optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
for t in range(500):
    y_pred = model(x)

    loss = criterion(y_pred, y)
    if t % 100 == 99:
        print(t, loss.item())

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print(f'Result: {model.string()}')
