"""Cosine schedules: CosineAnnealingLR, CosineAnnealingWarmRestarts, and tinynorm's LinearWarmupCosine."""
from __future__ import annotations

import math

from ..optimizer import Optimizer
from .base import LRScheduler, check_positive_int, check_real, current_lrs


class CosineAnnealingLR(LRScheduler):
    """Half a cosine from ``base_lr`` at step 0 down to ``eta_min`` at step ``T_max`` (past it the
    cosine climbs back up, as in PyTorch). The closed form, exact while nothing else changes the lr::

        lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * last_epoch / T_max)) / 2

    Chainable, as PyTorch's: each step scales the distance of the current lr to ``eta_min`` by the
    ratio of consecutive cosine terms.
    """

    def __init__(self, optimizer: Optimizer, T_max: int,  # noqa: N803  (PyTorch's name)
                 eta_min: float = 0.0, last_epoch: int = -1) -> None:
        check_positive_int("CosineAnnealingLR", "T_max", T_max)
        check_real("CosineAnnealingLR", "eta_min", eta_min)
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, period, groups = self.last_epoch, self.T_max, self.optimizer.param_groups
        if self._is_initial:
            return current_lrs(self)
        if (t - 1 - period) % (2 * period) == 0:  # the bottom of the cosine: the ratio below would be 0/0
            return [group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / period)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        ratio = (1 + math.cos(math.pi * t / period)) / (1 + math.cos(math.pi * (t - 1) / period))
        return [ratio * (group["lr"] - self.eta_min) + self.eta_min for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [_cosine(base_lr, self.eta_min, self.last_epoch / self.T_max) for base_lr in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (Loshchilov & Hutter, 2017): half a cosine from ``base_lr`` to ``eta_min`` over ``T_0``
    steps, then a restart at ``base_lr``, each period ``T_mult`` times longer than the one before::

        lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2

    ``T_cur`` counts the steps since the last restart, ``T_i`` is the current period. ``step(epoch)``
    takes fractional epochs (e.g. ``epoch + batch / batches``), as in PyTorch. A closed form.
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1,  # noqa: N803  (PyTorch's names)
                 eta_min: float = 0.0, last_epoch: int = -1) -> None:
        if isinstance(T_0, bool) or not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if isinstance(T_mult, bool) or not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        check_real("CosineAnnealingWarmRestarts", "eta_min", eta_min)
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [_cosine(base_lr, self.eta_min, self.T_cur / self.T_i) for base_lr in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """One step, or to the (possibly fractional) ``epoch``."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            check_real("CosineAnnealingWarmRestarts.step", "epoch", epoch, low=0)
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    restarts = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**restarts - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**restarts
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = current_lrs(self)


class LinearWarmupCosine(LRScheduler):
    """tinynorm's warmup schedule: a straight line from 0 up to ``base_lr`` over ``warmup_steps``
    steps, then half a cosine down to ``min_lr`` at ``total_steps``, then ``min_lr``::

        step t < warmup_steps:               lr = base_lr * t / warmup_steps
        warmup_steps <= t <= total_steps:    lr = min_lr + (base_lr - min_lr) * (1 + cos(pi * p)) / 2,
                                             p = (t - warmup_steps) / (total_steps - warmup_steps)
        t > total_steps:                     lr = min_lr

    The lr of step 0 is 0 (the first update does nothing): warmup keeps the first, largest, noisiest
    updates of Adam-style optimizers small while their moving averages settle. A closed form of
    ``base_lrs`` and the step (it starts at 0, so it cannot chain); in PyTorch the same schedule is
    ``SequentialLR`` of ``LinearLR`` and ``CosineAnnealingLR``, except for the lr of 0 at step 0.
    """

    def __init__(self, optimizer: Optimizer, warmup_steps: int, total_steps: int, min_lr: float = 0.0,
                 last_epoch: int = -1) -> None:
        if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int) or warmup_steps < 0:
            raise ValueError(f"warmup_steps must be an int >= 0, got {warmup_steps!r}")
        if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps <= warmup_steps:
            raise ValueError(f"total_steps must be an int > warmup_steps ({warmup_steps}), got {total_steps!r}")
        check_real("LinearWarmupCosine", "min_lr", min_lr, low=0)
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.min_lr = min_lr
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t = self.last_epoch
        if t < self.warmup_steps:
            return [base_lr * t / self.warmup_steps for base_lr in self.base_lrs]
        progress = min(1.0, (t - self.warmup_steps) / (self.total_steps - self.warmup_steps))
        return [_cosine(base_lr, self.min_lr, progress) for base_lr in self.base_lrs]


def _cosine(start: float, end: float, progress: float) -> float:
    """From ``start`` at progress 0 to ``end`` at progress 1 along half a cosine."""
    return end + (start - end) * (1 + math.cos(math.pi * progress)) / 2
