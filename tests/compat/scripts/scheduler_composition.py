"""Schedulers the way larger training scripts combine them: ConstantLR, PolynomialLR, CyclicLR (per
batch, triangular2 and exp_range), CosineAnnealingWarmRestarts, two schedulers stepping one optimizer,
ChainedScheduler, per-group learning rates, a scheduler's state_dict restored into a fresh one, and
ReduceLROnPlateau in 'max' mode with a cooldown."""
import torch
from torch import nn, optim
from torch.optim import lr_scheduler


def new_optimizer(lr=0.1):
    model = nn.Linear(3, 1)
    return optim.SGD([{'params': [model.weight]}, {'params': [model.bias], 'lr': lr / 10}], lr=lr, momentum=0.9)


def trace(optimizer, schedulers, steps):
    rates = []
    for _ in range(steps):
        optimizer.step()
        for scheduler in schedulers:
            scheduler.step()
        rates.append([round(group['lr'], 6) for group in optimizer.param_groups])
    return rates


o = new_optimizer()
print("ConstantLR", trace(o, [lr_scheduler.ConstantLR(o, factor=0.5, total_iters=3)], 5))
o = new_optimizer()
print("PolynomialLR", trace(o, [lr_scheduler.PolynomialLR(o, total_iters=4, power=2.0)], 6))
o = new_optimizer()
print("CyclicLR", trace(o, [lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2,
                                                   mode='triangular2')], 9))
o = new_optimizer()
print("CyclicLR exp_range", trace(o, [lr_scheduler.CyclicLR(o, base_lr=[0.01, 0.001], max_lr=[0.1, 0.01],
                                                             step_size_up=3, mode='exp_range', gamma=0.9)], 7))
o = new_optimizer()
print("WarmRestarts", trace(o, [lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001)], 10))

o = new_optimizer()
both = [lr_scheduler.ExponentialLR(o, gamma=0.9), lr_scheduler.MultiStepLR(o, milestones=[2, 4], gamma=0.5)]
print("two schedulers", trace(o, both, 6))
o = new_optimizer()
chained = lr_scheduler.ChainedScheduler([lr_scheduler.ConstantLR(o, factor=0.1, total_iters=2),
                                         lr_scheduler.ExponentialLR(o, gamma=0.9)])
print("ChainedScheduler", trace(o, [chained], 5), chained.get_last_lr())

o = new_optimizer()
step = lr_scheduler.StepLR(o, step_size=2, gamma=0.5)
trace(o, [step], 3)
saved = step.state_dict()
print(saved['last_epoch'], saved['_last_lr'])
o2 = new_optimizer()
for group, lr in zip(o2.param_groups, saved['_last_lr']):
    group['lr'] = lr
restored = lr_scheduler.StepLR(o2, step_size=2, gamma=0.5)
restored.load_state_dict(saved)
print(trace(o2, [restored], 3) == trace(o, [step], 3), restored.last_epoch)

o = new_optimizer()
plateau = lr_scheduler.ReduceLROnPlateau(o, mode='max', factor=0.5, patience=1, cooldown=1, min_lr=0.01)
accuracies = [0.5, 0.6, 0.6, 0.59, 0.6, 0.58, 0.57, 0.61, 0.6, 0.6, 0.6]
rates = []
for accuracy in accuracies:
    plateau.step(accuracy)
    rates.append(round(o.param_groups[0]['lr'], 6))
print("ReduceLROnPlateau max", rates, plateau.get_last_lr())
