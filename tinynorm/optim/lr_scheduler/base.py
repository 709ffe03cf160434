"""``LRScheduler``: the base class of the learning-rate schedules, and the checks they share.

A scheduler writes each parameter group's ``'lr'``. As in PyTorch 2.13, most schedules are
*chainable*: ``get_lr`` computes the next lr from the group's current one (``StepLR`` multiplies it
by ``gamma`` at each boundary), so two schedulers on one optimizer compose, and an lr changed by
hand (``param_groups[0]['lr'] = 0.01``) is the starting point of the next ``step()``. The others
(``LambdaLR``, ``CyclicLR``, ``OneCycleLR``...) set the lr from ``base_lrs`` and the step count.
``step(epoch)`` (deprecated in PyTorch, with its warning) jumps to ``epoch`` with the closed form
``_get_closed_form_lr`` where a schedule has one.
"""
from __future__ import annotations

import copy
import math
import numbers
import types
import warnings
from typing import Any

from ..optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. "
    "Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different "
    "from None, the closed form is used instead of the new chainable form, where available."
)
# Attributes PyTorch's schedulers save but that only matter inside a step: ignored when loading.
_TRANSIENT = ("_is_initial", "_get_lr_called_within_step")


class LRScheduler:
    """Base class: subclasses define :meth:`get_lr`, the lrs of the groups at step ``last_epoch``
    (called by :meth:`step` after ``last_epoch`` was incremented).

    Construction sets each group's ``'initial_lr'`` (unless resuming with ``last_epoch >= 0``) and
    takes the first step, to ``last_epoch + 1``, as PyTorch does; during that step ``_is_initial``
    is true, and chainable schedules keep the current lrs.
    """

    _not_saved: tuple[str, ...] = ("optimizer",)  # attributes left out of the state dict
    _is_initial = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        self.optimizer = check_optimizer(optimizer)
        if isinstance(last_epoch, bool) or not isinstance(last_epoch, int) or last_epoch < -1:
            raise ValueError(f"{type(self).__name__}: last_epoch must be an int >= -1, got {last_epoch!r}")
        for index, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(
                    f"param 'initial_lr' is not specified in param_groups[{index}] when resuming a scheduler with "
                    f"last_epoch={last_epoch}: load the optimizer's state dict first, or start with last_epoch=-1"
                )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """The step taken at construction (and by ``SequentialLR`` when a schedule takes over)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            del self._is_initial

    def get_lr(self) -> list[float]:
        """The lr of each parameter group at step ``last_epoch``."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance one step (or, deprecated, jump to ``epoch``) and write the new lrs into the
        optimizer's parameter groups. If computing them fails, nothing changes."""
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._step_count += 1
        try:
            self._update_lr(epoch)
        except Exception:
            self._step_count -= 1
            raise

    def _update_lr(self, epoch: int | None = None) -> None:
        previous = self.last_epoch
        try:
            if epoch is None:
                self.last_epoch += 1
                lrs = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                lrs = closed_form() if closed_form is not None else self.get_lr()
            lrs = list(lrs)
        except Exception:
            self.last_epoch = previous
            raise
        if len(lrs) != len(self.optimizer.param_groups):
            self.last_epoch = previous
            raise ValueError(f"{type(self).__name__}: get_lr() gave {len(lrs)} lrs for "
                             f"{len(self.optimizer.param_groups)} parameter groups (a group added after the "
                             "scheduler was made?)")
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The lrs set by the last :meth:`step`, one per parameter group."""
        return self._last_lr

    # ------------------------------------------------------------------------------- state dict
    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer (and functions, which cannot be saved), copied."""
        return {name: copy.deepcopy(value) for name, value in vars(self).items() if name not in self._not_saved}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`; it must come from a scheduler of the same class. Every value is
        checked before anything changes, so a failed load leaves the scheduler as it was."""
        self._apply_state(self._checked_state(state_dict))

    def _checked_state(self, state_dict: Any) -> dict[str, Any]:
        """A checked copy of ``state_dict``, ready for :meth:`_apply_state`."""
        owner = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, dict):
            raise TypeError(f"{owner}: expected a dict, got {type(state_dict).__name__}")
        given = {name: value for name, value in state_dict.items() if name not in _TRANSIENT}
        current = self.state_dict()
        missing, unexpected = sorted(set(current) - set(given)), sorted(set(given) - set(current))
        if missing or unexpected:
            raise ValueError(f"{owner}: the state dict does not fit a {type(self).__name__} (missing keys "
                             f"{missing}, unexpected keys {unexpected}): is it another scheduler's?")
        for name, value in given.items():
            _check_like(owner, name, value, current[name], whole=name in ("last_epoch", "_step_count"))
        return copy.deepcopy(given)

    def _apply_state(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def current_lrs(scheduler: LRScheduler) -> list[float]:
    """The groups' lrs as they are: the step of a chainable schedule that changes nothing."""
    return [group["lr"] for group in scheduler.optimizer.param_groups]


def function_state(function: Any) -> dict[str, Any] | None:
    """What a state dict keeps of a user function, as in PyTorch: nothing (None) for a plain function or
    lambda, which cannot be saved; a copy of the attributes of a callable object."""
    return None if function is None or isinstance(function, types.FunctionType) else dict(vars(function))


def check_function_state(owner: str, name: str, saved: Any) -> None:
    if saved is not None and not isinstance(saved, dict):
        raise ValueError(f"{owner}.load_state_dict: {name} must be None or the attributes of a callable object "
                         f"(a dict), got {saved!r}")


def restore_function_state(function: Any, saved: dict[str, Any] | None) -> None:
    if saved is not None and function is not None:
        vars(function).update(saved)


def check_optimizer(optimizer: Any) -> Optimizer:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
    return optimizer


def _check_like(owner: str, name: str, value: Any, current: Any, whole: bool = False) -> None:
    """Raise unless a loaded ``value`` has the kind of the ``current`` one: a number for a number (an
    int where ``whole``), a sequence of the same length, a dict, a string; anything for None."""
    if current is None:
        return
    if isinstance(current, bool):
        ok = isinstance(value, bool)
    elif isinstance(current, numbers.Real):
        ok = isinstance(value, int) if whole else isinstance(value, numbers.Real)
        ok = ok and not isinstance(value, bool)
    elif isinstance(current, (list, tuple)):
        ok = isinstance(value, (list, tuple)) and len(value) == len(current)
        if ok:
            for index, (item, current_item) in enumerate(zip(value, current)):
                _check_like(owner, f"{name}[{index}]", item, current_item)
    elif isinstance(current, dict):
        ok = isinstance(value, dict)
    else:
        ok = isinstance(value, type(current))
    if not ok:
        raise ValueError(f"{owner}: {name} must be like the current value {current!r}, got {value!r}")


def check_real(owner: str, name: str, value: Any, low: float | None = None, high: float | None = None) -> None:
    """Raise unless ``value`` is a real number (not a bool) in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {name} must be a real number, got {value!r} ({type(value).__name__})")
    if math.isnan(value) or (low is not None and value < low) or (high is not None and value > high):
        bounds = f"in [{low}, {high}]" if low is not None and high is not None else \
            f">= {low}" if low is not None else f"<= {high}"
        raise ValueError(f"{owner}: {name} must be {bounds}, got {value!r}")


def check_positive_int(owner: str, name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{owner}: {name} must be a positive int, got {value!r}")


def per_group(name: str, optimizer: Optimizer, value: Any) -> list[Any]:
    """``value`` once per parameter group: a list or tuple of one value per group, or one value for all."""
    groups = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != groups:
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has "
                             f"{len(value)} values, param_groups has {groups}.")
        return list(value)
    return [value] * groups
