"""ReduceLROnPlateau: cut the lr when a monitored metric stops improving."""
from __future__ import annotations

import math
import warnings
from typing import Any, Literal, SupportsFloat

from ..optimizer import Optimizer
from .base import EPOCH_DEPRECATION_WARNING, LRScheduler, check_optimizer, check_real, current_lrs


class ReduceLROnPlateau(LRScheduler):
    """Multiply each group's lr by ``factor`` (not below its ``min_lr``) once the metric given to
    ``step(metric)`` has not improved for more than ``patience`` steps, then wait ``cooldown`` steps
    before counting again. "Improved" means below ``best * (1 - threshold)`` (``mode='min'``,
    ``threshold_mode='rel'``), below ``best - threshold`` (``'abs'``), or the mirror images for
    ``mode='max'``. Changes smaller than ``eps`` are skipped. Chainable: it scales the current lr.
    """

    def __init__(self, optimizer: Optimizer, mode: Literal["min", "max"] = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: Literal["rel", "abs"] = "rel",
                 cooldown: int = 0, min_lr: list[float] | float = 0, eps: float = 1e-8) -> None:
        check_real("ReduceLROnPlateau", "factor", factor)
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if factor < 0:
            raise ValueError(f"ReduceLROnPlateau: factor must be >= 0, got {factor!r}")
        self.factor = factor
        self.optimizer = check_optimizer(optimizer)
        groups = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != groups:
                raise ValueError(f"expected {groups} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * groups
        for value in self.min_lrs:
            check_real("ReduceLROnPlateau", "min_lr", value, low=0)
        for name, value in (("patience", patience), ("cooldown", cooldown)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"ReduceLROnPlateau: {name} must be an int >= 0, got {value!r}")
        check_real("ReduceLROnPlateau", "threshold", threshold, low=0)
        check_real("ReduceLROnPlateau", "eps", eps, low=0)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = current_lrs(self)
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        """Whether the metric ``a`` improves on ``best`` by more than the threshold."""
        if self.mode == "min":
            return a < (best * (1.0 - self.threshold) if self.threshold_mode == "rel" else best - self.threshold)
        return a > (best * (self.threshold + 1.0) if self.threshold_mode == "rel" else best + self.threshold)

    def step(self, metrics: SupportsFloat, epoch: int | None = None) -> None:  # type: ignore[override]
        """Count one step with the monitored value ``metrics`` (a number or a one-element tensor)."""
        try:
            current = float(metrics)
        except (TypeError, ValueError) as error:
            raise TypeError(f"ReduceLROnPlateau.step: metrics must be a number or a one-element tensor, got "
                            f"{type(metrics).__name__}") from error
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = current_lrs(self)

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs from when "
                    f"`ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually due to a new param group "
                    "being added to the optimizer. Please modify the `min_lrs` field to match the length of the "
                    "`optimizer` param groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, min_lr)
            if old_lr - new_lr > self.eps:
                group["lr"] = new_lr

    def _checked_state(self, state_dict: Any) -> dict[str, Any]:
        state = super()._checked_state(state_dict)
        if state["mode"] not in ("min", "max") or state["threshold_mode"] not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau.load_state_dict: unknown mode {state['mode']!r} or threshold mode "
                             f"{state['threshold_mode']!r}")
        return state

    def _apply_state(self, state: dict[str, Any]) -> None:
        super()._apply_state(state)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)
