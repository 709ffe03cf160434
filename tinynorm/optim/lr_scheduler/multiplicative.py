"""Schedules that scale the lr by factors: LambdaLR, MultiplicativeLR, StepLR, MultiStepLR,
ExponentialLR, ConstantLR, LinearLR and PolynomialLR.

All but ``LambdaLR`` are chainable (see :mod:`.base`): each step multiplies the group's current lr
by the schedule's factor for that step, so the lr at step ``t`` equals the closed form given in each
docstring only while nothing else changes the lr.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from typing import Any, Callable, Iterable

from ..optimizer import Optimizer
from .base import (
    LRScheduler, check_function_state, check_optimizer, check_positive_int, check_real, current_lrs, function_state,
    restore_function_state,
)

Factor = Callable[[int], float]


class _FunctionScheduler(LRScheduler):
    """LambdaLR and MultiplicativeLR: one user function per group, saved as PyTorch does (a plain
    function cannot be saved: None; a callable object: a copy of its ``__dict__``)."""

    _not_saved = ("optimizer", "lr_lambdas")

    def __init__(self, optimizer: Optimizer, lr_lambda: Factor | list[Factor], last_epoch: int = -1) -> None:
        groups = len(check_optimizer(optimizer).param_groups)
        lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * groups
        if len(lambdas) != groups:
            raise ValueError(f"Expected {groups} lr_lambdas, but got {len(lambdas)}")
        for function in lambdas:
            if not callable(function):
                raise TypeError(f"lr_lambda should be a function, but got {type(function).__name__}")
        self.lr_lambdas = lambdas
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "lr_lambdas": [function_state(f) for f in self.lr_lambdas]}

    def _checked_state(self, state_dict: Any) -> dict[str, Any]:
        state = super()._checked_state(state_dict)
        for index, saved in enumerate(state["lr_lambdas"]):
            check_function_state(type(self).__name__, f"lr_lambdas[{index}]", saved)
        return state

    def _apply_state(self, state: dict[str, Any]) -> None:
        saved_lambdas = state.pop("lr_lambdas")
        super()._apply_state(state)
        for function, saved in zip(self.lr_lambdas, saved_lambdas):
            restore_function_state(function, saved)


class LambdaLR(_FunctionScheduler):
    """``lr = base_lr * lr_lambda(last_epoch)``; ``lr_lambda`` is one function, or a list with one
    function per parameter group. (A closed form: it does not chain.)"""

    def get_lr(self) -> list[float]:
        return [base_lr * f(self.last_epoch) for base_lr, f in zip(self.base_lrs, self.lr_lambdas)]


class MultiplicativeLR(_FunctionScheduler):
    """Each step multiplies the lr by ``lr_lambda(last_epoch)`` (one function, or one per group)."""

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return current_lrs(self)
        return [group["lr"] * f(self.last_epoch) for group, f in zip(self.optimizer.param_groups, self.lr_lambdas)]


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` steps: ``base_lr * gamma ** (last_epoch // step_size)``."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        check_positive_int("StepLR", "step_size", step_size)
        check_real("StepLR", "gamma", gamma)
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return current_lrs(self)
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone (twice at a milestone listed twice):
    ``base_lr * gamma ** (number of milestones <= last_epoch)``."""

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        milestones = list(milestones)
        for milestone in milestones:
            if isinstance(milestone, bool) or not isinstance(milestone, int):
                raise TypeError(f"MultiStepLR: milestones must be ints, got {milestone!r}")
        check_real("MultiStepLR", "gamma", gamma)
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return current_lrs(self)
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        milestones = sorted(Counter(self.milestones).elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]

    def state_dict(self) -> dict[str, Any]:
        # A plain dict (milestone: count), which tinynorm.save can write; PyTorch pickles the Counter.
        return {**super().state_dict(), "milestones": dict(self.milestones)}

    def _apply_state(self, state: dict[str, Any]) -> None:
        super()._apply_state({**state, "milestones": Counter(state["milestones"])})


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every step: ``base_lr * gamma ** last_epoch``."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        check_real("ExponentialLR", "gamma", gamma)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return current_lrs(self)
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma**self.last_epoch for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """Multiply the lr by ``factor`` until step ``total_iters``, then restore it:
    ``base_lr * factor`` for ``last_epoch < total_iters``, ``base_lr`` after.

    ``factor`` must be in (0, 1]: PyTorch also accepts 0, and then divides by it at ``total_iters``.
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        check_real("ConstantLR", "factor", factor)
        if not 0 < factor <= 1.0:
            raise ValueError("Constant multiplicative factor expected to be greater than 0 and less or equal to 1, "
                             f"got {factor!r}")
        check_positive_int("ConstantLR", "total_iters", total_iters)
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return current_lrs(self)
        return [group["lr"] * (1.0 / self.factor) for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the lr by a factor that goes linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` steps: ``base_lr * (start + (end - start) * min(last_epoch, total_iters) / total_iters)``."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        check_real("LinearLR", "start_factor", start_factor)
        check_real("LinearLR", "end_factor", end_factor)
        if not 0 < start_factor <= 1.0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
        if not 0 <= end_factor <= 1.0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        check_positive_int("LinearLR", "total_iters", total_iters)
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return current_lrs(self)
        change = self.end_factor - self.start_factor
        factor = 1.0 + change / (self.total_iters * self.start_factor + (self.last_epoch - 1) * change)
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        progress = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base_lr * (self.start_factor + (self.end_factor - self.start_factor) * progress)
                for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the lr to 0 at ``total_iters`` along a polynomial:
    ``base_lr * (1 - min(last_epoch, total_iters) / total_iters) ** power``."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        check_positive_int("PolynomialLR", "total_iters", total_iters)
        check_real("PolynomialLR", "power", power)
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial or self.last_epoch > self.total_iters:
            return current_lrs(self)
        decay_factor = ((1.0 - self.last_epoch / self.total_iters)
                        / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [group["lr"] * decay_factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for base_lr in self.base_lrs]

