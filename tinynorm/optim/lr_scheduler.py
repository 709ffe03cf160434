"""Learning-rate schedules: set each parameter group's ``'lr'`` as a function of the step count.

Call ``scheduler.step()`` once after each ``optimizer.step()`` (or once per epoch, as you prefer: a
scheduler counts calls, in ``last_epoch``). Every schedule here is a closed form of ``last_epoch``
and the group's initial lr (``base_lrs``), so it can be resumed from ``last_epoch`` alone. Unlike
PyTorch's, tinynorm's schedulers do not chain: two schedulers on one optimizer overwrite each other.
"""
from __future__ import annotations

import copy
import math
import numbers
from typing import Any, Callable

from .optimizer import Optimizer


class LRScheduler:
    """Base class: subclasses define :meth:`get_lr`, the lrs of the groups at ``last_epoch``.

    Construction sets each group's ``'initial_lr'`` (unless resuming with ``last_epoch >= 0``) and
    applies the lr of step 0, as PyTorch does.
    """

    _not_saved: tuple[str, ...] = ("optimizer",)  # attributes left out of the state dict

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: expected an Optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        for index, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise ValueError(
                    f"{type(self).__name__}: last_epoch={last_epoch} resumes a schedule, but param_groups[{index}] "
                    "has no 'initial_lr'; load the optimizer's state dict first, or start with last_epoch=-1"
                )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self) -> list[float]:
        """The lr of each parameter group at step ``last_epoch``."""
        raise NotImplementedError

    def step(self) -> None:
        """Advance one step and write the new lrs into the optimizer's parameter groups."""
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The lrs set by the last :meth:`step`, one per parameter group."""
        return self._last_lr

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer (and functions, which cannot be saved)."""
        return {name: copy.deepcopy(value) for name, value in vars(self).items() if name not in self._not_saved}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`; it must come from a scheduler of the same class."""
        expected = set(self.state_dict())
        if not isinstance(state_dict, dict) or set(state_dict) != expected:
            got = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict).__name__
            raise ValueError(f"{type(self).__name__}.load_state_dict: expected keys {sorted(expected)}, got {got}")
        self.__dict__.update(copy.deepcopy(state_dict))


class LambdaLR(LRScheduler):
    """``lr = base_lr * lr_lambda(last_epoch)``; ``lr_lambda`` is one function, or a list with one
    function per parameter group. The functions are not part of the state dict."""

    _not_saved = ("optimizer", "lr_lambdas")

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        groups = len(optimizer.param_groups)
        lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * groups
        if len(lambdas) != groups or not all(callable(f) for f in lambdas):
            raise ValueError(f"lr_lambda must be a function or a list of {groups} functions (one per "
                             f"parameter group), got {lr_lambda!r}")
        self.lr_lambdas = lambdas
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base_lr * f(self.last_epoch) for base_lr, f in zip(self.base_lrs, self.lr_lambdas)]


class StepLR(LRScheduler):
    """``lr = base_lr * gamma ** (last_epoch // step_size)``: decay by ``gamma`` every ``step_size`` steps."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        _check_positive_int("step_size", step_size)
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Half a cosine from ``base_lr`` at step 0 down to ``eta_min`` at step ``T_max``::

        lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * last_epoch / T_max)) / 2

    (PyTorch documents this closed form; past ``T_max`` the cosine climbs back up, as in PyTorch.)
    """

    def __init__(self, optimizer: Optimizer, T_max: int,  # noqa: N803  (PyTorch's name)
                 eta_min: float = 0.0, last_epoch: int = -1) -> None:
        _check_positive_int("T_max", T_max)
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [_cosine(base_lr, self.eta_min, self.last_epoch / self.T_max) for base_lr in self.base_lrs]


class LinearWarmupCosine(LRScheduler):
    """tinynorm's warmup schedule: a straight line from 0 up to ``base_lr`` over ``warmup_steps``
    steps, then half a cosine down to ``min_lr`` at ``total_steps``, then ``min_lr``::

        step t < warmup_steps:               lr = base_lr * t / warmup_steps
        warmup_steps <= t <= total_steps:    lr = min_lr + (base_lr - min_lr) * (1 + cos(pi * p)) / 2,
                                             p = (t - warmup_steps) / (total_steps - warmup_steps)
        t > total_steps:                     lr = min_lr

    The lr of step 0 is 0 (the first update does nothing): warmup keeps the first, largest, noisiest
    updates of Adam-style optimizers small while their moving averages settle.
    """

    def __init__(self, optimizer: Optimizer, warmup_steps: int, total_steps: int, min_lr: float = 0.0,
                 last_epoch: int = -1) -> None:
        if not (isinstance(warmup_steps, int) and warmup_steps >= 0):
            raise ValueError(f"warmup_steps must be an int >= 0, got {warmup_steps!r}")
        if not (isinstance(total_steps, int) and total_steps > warmup_steps):
            raise ValueError(f"total_steps must be an int > warmup_steps ({warmup_steps}), got {total_steps!r}")
        if isinstance(min_lr, bool) or not isinstance(min_lr, numbers.Real) or not min_lr >= 0:
            raise ValueError(f"min_lr must be a number >= 0, got {min_lr!r}")
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


def _check_positive_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
