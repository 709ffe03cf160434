"""Control flow and weight sharing: a forward pass that reuses one parameter a random number of times
("Learning PyTorch with Examples": Control Flow + Weight Sharing), with SGD and momentum."""
import math
import random

import numpy as np
import torch


class DynamicNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor(0.1))
        self.b = torch.nn.Parameter(torch.tensor(-0.2))
        self.c = torch.nn.Parameter(torch.tensor(0.05))
        self.d = torch.nn.Parameter(torch.tensor(0.15))
        self.e = torch.nn.Parameter(torch.tensor(-0.01))

    def forward(self, x):
        """y = a + b x + c x^2 + d x^3 + e x^4 (+ e x^5 ...): 4, 5 or 6 terms, chosen at random."""
        y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
        for exp in range(4, random.randint(4, 6)):
            y = y + self.e * x ** exp
        return y

    def string(self):
        return (f'y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + {self.d.item()} x^3 + '
                f'{self.e.item()} x^4 ? + {self.e.item()} x^5 ?')


random.seed(0)  # Python's own generator: the same draws in every run and with every library
x = torch.tensor(np.linspace(-math.pi, math.pi, 2000), dtype=torch.float32)
y = torch.sin(x)

model = DynamicNet()
criterion = torch.nn.MSELoss(reduction='sum')
optimizer = torch.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
for t in range(600):
    y_pred = model(x)

    loss = criterion(y_pred, y)
    if t == 0:
        first_loss = loss.item()
    if t % 100 == 99:
        print(t, loss.item())

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print(f'Result: {model.string()}')
print(optimizer.state_dict()['param_groups'][0]['momentum'], len(optimizer.state_dict()['state']))
assert loss.item() < first_loss
