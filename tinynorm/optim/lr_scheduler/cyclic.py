"""Cyclical schedules: CyclicLR and OneCycleLR. Both are closed forms of the step count, and both
can also cycle the momentum (SGD's ``momentum``, or ``beta1`` of Adam-style optimizers) against the lr."""
from __future__ import annotations

import math
from typing import Any, Callable, Literal

from ..optimizer import Optimizer
from ..options import ParamGroup
from .base import (
    LRScheduler, check_function_state, check_optimizer, check_real, function_state, per_group, restore_function_state,
)


class CyclicLR(LRScheduler):
    """The cyclical learning rate of Smith (2017): the lr climbs linearly from ``base_lr`` to
    ``max_lr`` over ``step_size_up`` steps and back down over ``step_size_down`` (default: the same),
    the cycle's height scaled by ``mode``: ``'triangular'`` (constant), ``'triangular2'`` (halved
    each cycle), ``'exp_range'`` (``gamma ** step``), or ``scale_fn`` (of the cycle, or of the step
    with ``scale_mode='iterations'``). Call ``step()`` after every batch. With ``cycle_momentum`` the
    momentum moves the opposite way, between ``max_momentum`` and ``base_momentum``.
    """

    _not_saved = ("optimizer", "_scale_fn_custom")

    def __init__(self, optimizer: Optimizer, base_lr: float | list[float], max_lr: float | list[float],
                 step_size_up: int = 2000, step_size_down: int | None = None,
                 mode: Literal["triangular", "triangular2", "exp_range"] = "triangular", gamma: float = 1.0,
                 scale_fn: Callable[[float], float] | None = None,
                 scale_mode: Literal["cycle", "iterations"] = "cycle", cycle_momentum: bool = True,
                 base_momentum: float = 0.8, max_momentum: float = 0.9, last_epoch: int = -1) -> None:
        check_optimizer(optimizer)
        base_lrs = per_group("base_lr", optimizer, base_lr)
        self.max_lrs = per_group("max_lr", optimizer, max_lr)
        for name, values in (("base_lr", base_lrs), ("max_lr", self.max_lrs)):
            for value in values:
                check_real("CyclicLR", name, value, low=0)
        check_real("CyclicLR", "step_size_up", step_size_up, low=0)
        up = float(step_size_up)
        if step_size_down is not None:
            check_real("CyclicLR", "step_size_down", step_size_down, low=0)
        down = float(step_size_down) if step_size_down is not None else up
        if up + down <= 0:
            raise ValueError(f"CyclicLR: a cycle must last at least one step, got step_size_up={step_size_up!r} "
                             f"and step_size_down={step_size_down!r}")
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        if scale_fn is not None and not callable(scale_fn):
            raise TypeError(f"CyclicLR: scale_fn must be a function, got {type(scale_fn).__name__}")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
        check_real("CyclicLR", "gamma", gamma)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode if scale_fn is not None else _MODE_SCALES[mode]
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _uses_beta1(optimizer)
            self.base_momentums = per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for max_m, base_m, group in zip(self.max_momentums, self.base_momentums, optimizer.param_groups):
                    _set_momentum(group, max_m, self.use_beta1)
                    group["max_momentum"], group["base_momentum"] = max_m, base_m
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def scale_fn(self, x: float) -> float:
        """The cycle's height factor at ``x`` (the cycle number, or the step with ``scale_mode='iterations'``)."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def get_lr(self) -> list[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        scale_factor = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base_lr + (max_lr - base_lr) * scale_factor * scale
               for base_lr, max_lr in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, base_m, max_m in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                _set_momentum(group, max_m - (max_m - base_m) * scale_factor * scale, self.use_beta1)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "_scale_fn_custom": function_state(self._scale_fn_custom)}

    def _checked_state(self, state_dict: Any) -> dict[str, Any]:
        state = super()._checked_state(state_dict)
        check_function_state("CyclicLR", "_scale_fn_custom", state["_scale_fn_custom"])
        if state["mode"] not in _MODE_SCALES and self._scale_fn_custom is None:
            raise ValueError(f"CyclicLR.load_state_dict: mode {state['mode']!r} is invalid and scale_fn is None")
        if state["scale_mode"] not in ("cycle", "iterations"):
            raise ValueError(f"CyclicLR.load_state_dict: scale_mode must be 'cycle' or 'iterations', "
                             f"got {state['scale_mode']!r}")
        return state

    def _apply_state(self, state: dict[str, Any]) -> None:
        saved_fn = state.pop("_scale_fn_custom")
        super()._apply_state(state)
        restore_function_state(self._scale_fn_custom, saved_fn)


_MODE_SCALES = {"triangular": "cycle", "triangular2": "cycle", "exp_range": "iterations"}


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin, 2017): the lr anneals from ``max_lr / div_factor`` up to
    ``max_lr`` over the first ``pct_start`` of ``total_steps`` (or ``epochs * steps_per_epoch``), then
    down to ``initial_lr / final_div_factor``, along a cosine (``anneal_strategy='cos'``) or a line;
    ``three_phase`` comes back to the initial lr before the final descent. Call ``step()`` after every
    batch; stepping past ``total_steps`` is an error. With ``cycle_momentum`` the momentum moves the
    opposite way, between ``max_momentum`` and ``base_momentum``.
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float], total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: Literal["cos", "linear"] = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85, max_momentum: float | list[float] = 0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        check_optimizer(optimizer)
        if total_steps is not None:
            if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            for name, value in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
                if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                    raise ValueError(f"Expected positive integer {name}, but got {value}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        for name, value in (("div_factor", div_factor), ("final_div_factor", final_div_factor)):
            check_real("OneCycleLR", name, value)
            if value <= 0:
                raise ValueError(f"OneCycleLR: {name} must be > 0, got {value!r}")
        self._anneal_func_type = anneal_strategy
        self._schedule_phases = _phases(self.total_steps, pct_start, three_phase)
        max_lrs = per_group("max_lr", optimizer, max_lr)
        for value in max_lrs:
            check_real("OneCycleLR", "max_lr", value, low=0)
        if last_epoch == -1:
            for max_lr_of_group, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = max_lr_of_group / div_factor
                group["max_lr"] = max_lr_of_group
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _uses_beta1(optimizer)
            if last_epoch == -1:
                for max_m, base_m, group in zip(per_group("max_momentum", optimizer, max_momentum),
                                                per_group("base_momentum", optimizer, base_momentum),
                                                optimizer.param_groups):
                    _set_momentum(group, max_m, self.use_beta1)
                    group["max_momentum"], group["base_momentum"] = max_m, base_m
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for index, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step <= end_step or index == len(self._schedule_phases) - 1:
                    if end_step == start_step:
                        raise ValueError(f"OneCycleLR: phase {index} of the schedule has no steps (pct_start "
                                         f"leaves none for it in total_steps={self.total_steps})")
                    pct = (step - start_step) / (end_step - start_step)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        momentum = self._anneal(group[phase["start_momentum"]], group[phase["end_momentum"]], pct)
                        _set_momentum(group, momentum, self.use_beta1)
                    break
                start_step = phase["end_step"]
        return lrs

    def _checked_state(self, state_dict: Any) -> dict[str, Any]:
        state = super()._checked_state(state_dict)
        if state["_anneal_func_type"] not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR.load_state_dict: unknown anneal strategy {state['_anneal_func_type']!r}")
        return state


def _phases(total_steps: int, pct_start: float, three_phase: bool) -> list[dict[str, Any]]:
    """Each phase's last step and the group entries its lr and momentum anneal between."""
    up = float(pct_start * total_steps) - 1
    if three_phase:
        return [
            dict(end_step=up, start_lr="initial_lr", end_lr="max_lr", start_momentum="max_momentum",
                 end_momentum="base_momentum"),
            dict(end_step=float(2 * pct_start * total_steps) - 2, start_lr="max_lr", end_lr="initial_lr",
                 start_momentum="base_momentum", end_momentum="max_momentum"),
            dict(end_step=total_steps - 1, start_lr="initial_lr", end_lr="min_lr", start_momentum="max_momentum",
                 end_momentum="max_momentum"),
        ]
    return [
        dict(end_step=up, start_lr="initial_lr", end_lr="max_lr", start_momentum="max_momentum",
             end_momentum="base_momentum"),
        dict(end_step=total_steps - 1, start_lr="max_lr", end_lr="min_lr", start_momentum="base_momentum",
             end_momentum="max_momentum"),
    ]


def _uses_beta1(optimizer: Optimizer) -> bool:
    """Whether the momentum to cycle is ``betas[0]`` (Adam-style) rather than ``momentum`` (SGD)."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
    return "betas" in optimizer.defaults


def _set_momentum(group: ParamGroup, momentum: float, use_beta1: bool) -> None:
    if use_beta1:
        group["betas"] = (momentum, *group["betas"][1:])
    else:
        group["momentum"] = momentum
