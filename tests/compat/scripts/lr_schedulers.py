"""Learning-rate schedulers stepped once per epoch after optimizer.step(), read with get_last_lr():
StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, LambdaLR, OneCycleLR (per batch), a linear warm-up
followed by cosine decay (SequentialLR), and ReduceLROnPlateau on a validation loss."""
import torch
from torch import nn, optim
from torch.optim import lr_scheduler


def run(make_scheduler, epochs=8, lr=0.1):
    model = nn.Linear(2, 1)
    optimizer = optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    scheduler = make_scheduler(optimizer)
    lrs = []
    for epoch in range(epochs):
        optimizer.step()
        lrs.append(round(scheduler.get_last_lr()[0], 8))
        scheduler.step()
    return lrs, round(optimizer.param_groups[0]['lr'], 8)


print("StepLR", run(lambda o: lr_scheduler.StepLR(o, step_size=3, gamma=0.5)))
print("MultiStepLR", run(lambda o: lr_scheduler.MultiStepLR(o, milestones=[2, 5], gamma=0.1)))
print("ExponentialLR", run(lambda o: lr_scheduler.ExponentialLR(o, gamma=0.9)))
print("CosineAnnealingLR", run(lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=6, eta_min=0.001)))
print("LambdaLR", run(lambda o: lr_scheduler.LambdaLR(o, lr_lambda=lambda epoch: 0.95 ** epoch)))
print("OneCycleLR", run(lambda o: lr_scheduler.OneCycleLR(o, max_lr=0.5, total_steps=10), epochs=9))
print("warm-up + cosine", run(lambda o: lr_scheduler.SequentialLR(
    o, schedulers=[lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=3),
                   lr_scheduler.CosineAnnealingLR(o, T_max=5)], milestones=[3]), epochs=9))

model = nn.Linear(2, 1)
optimizer = optim.Adam(model.parameters(), lr=0.01)
plateau = lr_scheduler.ReduceLROnPlateau(optimizer, mode='min', factor=0.5, patience=1)
for epoch, val_loss in enumerate([1.0, 0.8, 0.85, 0.9, 0.7, 0.72, 0.75, 0.71]):
    optimizer.step()
    plateau.step(val_loss)
    print(epoch, val_loss, optimizer.param_groups[0]['lr'], plateau.get_last_lr())

# A manual change of the learning rate between epochs, as a user does when fine-tuning.
model = nn.Linear(2, 1)
optimizer = optim.SGD(model.parameters(), lr=0.1)
scheduler = lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
for epoch in range(6):
    optimizer.step()
    scheduler.step()
    if epoch == 2:
        for param_group in optimizer.param_groups:
            param_group['lr'] = 0.04
    print(epoch, round(scheduler.get_last_lr()[0], 8), round(optimizer.param_groups[0]['lr'], 8))
state = scheduler.state_dict()
print(state['last_epoch'], state['base_lrs'], state['step_size'], state['gamma'])
