"""Schedules made of schedules: SequentialLR (one after another) and ChainedScheduler (all at once)."""
from __future__ import annotations

from bisect import bisect_right
from typing import Any, Sequence

from ..optimizer import Optimizer
from .base import LRScheduler, check_optimizer, current_lrs
from .plateau import ReduceLROnPlateau


class _Composite(LRScheduler):
    """State dicts of composite schedules hold their schedules' state dicts, under ``_schedulers``."""

    _not_saved = ("optimizer", "_schedulers")

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "_schedulers": [s.state_dict() for s in self._schedulers]}

    def _checked_state(self, state_dict: Any) -> dict[str, Any]:
        state = super()._checked_state(state_dict)
        state["_schedulers"] = [s._checked_state(saved) for s, saved in zip(self._schedulers, state["_schedulers"])]
        return state

    def _apply_state(self, state: dict[str, Any]) -> None:
        saved = state.pop("_schedulers")
        super()._apply_state(state)
        for scheduler, checked in zip(self._schedulers, saved):
            scheduler._apply_state(checked)


def _check_schedulers(owner: str, schedulers: Sequence[LRScheduler], optimizer: Optimizer) -> None:
    for index, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{owner} at index {index} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires additional "
                             "kwargs to be specified when calling `step`, but got one at index "
                             f"{index} in the given schedulers sequence.")
        if scheduler.optimizer is not optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, but got scheduler "
                             f"{type(scheduler).__name__} at index {index} with another optimizer.")


class SequentialLR(_Composite):
    """``schedulers[0]`` until step ``milestones[0]``, then ``schedulers[1]``, and so on: e.g. a
    ``LinearLR`` warmup followed by ``CosineAnnealingLR``. At its milestone each schedule starts over
    from its own step 0 (its closed form at 0, as in PyTorch)."""

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler], milestones: list[int],
                 last_epoch: int = -1) -> None:
        check_optimizer(optimizer)
        schedulers, milestones = list(schedulers), list(milestones)
        if not schedulers:
            raise ValueError("SequentialLR expects at least one scheduler, but got no scheduler.")
        _check_schedulers("SequentialLR", schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more than the number of "
                f"milestone points, but got number of schedulers {len(schedulers)} and the number of milestones to "
                f"be equal to {len(milestones)}")
        if any(isinstance(m, bool) or not isinstance(m, int) for m in milestones) or milestones != sorted(milestones):
            raise ValueError(f"SequentialLR: milestones must be increasing ints, got {milestones!r}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:  # undo the first steps the schedules took when they were made
            group["lr"] = group["initial_lr"]
        _undo_first_step(self)
        current = self._schedulers[bisect_right(self._milestones, 0)]
        current._initial_step()
        self._last_lr = current.get_last_lr()

    def step(self) -> None:  # type: ignore[override]  (no epoch argument, as in PyTorch)
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


def _undo_first_step(scheduler: LRScheduler) -> None:
    """Take back the step each (nested) schedule took at construction."""
    if hasattr(scheduler, "_schedulers"):
        for inner in scheduler._schedulers:
            _undo_first_step(inner)
    else:
        scheduler.last_epoch -= 1


class ChainedScheduler(_Composite):
    """Step every schedule of ``schedulers`` at each ``step()``, in order: their factors multiply
    (e.g. ``ConstantLR`` warmup times ``ExponentialLR`` decay)."""

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None) -> None:
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError("ChainedScheduler expects at least one scheduler to be chained, but got no scheduler.")
        optimizer = optimizer if optimizer is not None else getattr(schedulers[0], "optimizer", None)
        check_optimizer(optimizer)
        _check_schedulers("ChainedScheduler", schedulers, optimizer)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = current_lrs(self)

    def step(self) -> None:  # type: ignore[override]
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = current_lrs(self)
