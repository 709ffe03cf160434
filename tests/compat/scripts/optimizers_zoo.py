"""Twenty steps of every common optimizer from one seeded start, as a hyper-parameter sweep runs them:
SGD (momentum, dampening, nesterov, weight decay), Adam (amsgrad), AdamW, Adagrad, Adadelta, Adamax,
NAdam, RAdam and RMSprop (momentum, centered). The losses and final weights must follow PyTorch's
trajectories; the optimizer's state_dict must round-trip."""
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

rng = np.random.default_rng(4)
inputs = torch.from_numpy(rng.normal(size=(32, 5)).astype(np.float32))
targets = inputs @ torch.from_numpy(rng.normal(size=(5, 2)).astype(np.float32)) + 0.1
start = {name: torch.from_numpy(rng.normal(0, 0.5, shape).astype(np.float32))
         for name, shape in [('0.weight', (8, 5)), ('0.bias', (8,)), ('2.weight', (2, 8)), ('2.bias', (2,))]}

optimizers = {
    'SGD momentum': lambda p: optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=1e-3),
    'SGD nesterov': lambda p: optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True),
    'Adam': lambda p: optim.Adam(p, lr=0.01),
    'Adam amsgrad': lambda p: optim.Adam(p, lr=0.01, betas=(0.8, 0.99), amsgrad=True, weight_decay=1e-2),
    'AdamW': lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.1),
    'Adagrad': lambda p: optim.Adagrad(p, lr=0.1, lr_decay=1e-3, initial_accumulator_value=0.1),
    'Adadelta': lambda p: optim.Adadelta(p, lr=1.0, rho=0.9),
    'Adamax': lambda p: optim.Adamax(p, lr=0.02),
    'NAdam': lambda p: optim.NAdam(p, lr=0.01),
    'RAdam': lambda p: optim.RAdam(p, lr=0.01),
    'RMSprop': lambda p: optim.RMSprop(p, lr=0.005),
    'RMSprop centered': lambda p: optim.RMSprop(p, lr=0.005, momentum=0.5, centered=True),
}

for name, make in optimizers.items():
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 2))
    model.load_state_dict(start)
    optimizer = make(model.parameters())
    losses = []
    for step in range(20):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print(f"{name:17} {losses[0]:.5f} {losses[9]:.5f} {losses[-1]:.5f}", model[2].bias.detach())
    state = optimizer.state_dict()
    again = make(model.parameters())
    again.load_state_dict(state)
    print(sorted(state['state'][0].keys()), again.state_dict()['param_groups'][0]['lr'])
