"""Whether operations record the autograd graph: ``no_grad``, ``enable_grad``, ``set_grad_enabled``,
``inference_mode``.

Inside ``no_grad()`` every op runs without recording anything, even if its inputs require grad: use it
for evaluation and for optimizer updates. All of them work as context managers and as decorators, and
restore the previous mode on exit, even when an exception is raised.

The mode belongs to the thread, as in PyTorch: a ``no_grad()`` block in one thread does not switch
recording off in another, so separate models can train in separate threads. A new thread starts with
recording on.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _ThreadState(threading.local):
    """The per-thread flags; the class attributes are each new thread's starting values."""

    enabled = True  # read by Function.apply for every op
    inference = False


_state = _ThreadState()


def is_grad_enabled() -> bool:
    """True when new operations in this thread are recorded for backward."""
    return _state.enabled


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` in this thread."""
    return _state.inference


class _GradMode:
    """Sets the mode for a ``with`` block, or for every call of a decorated function."""

    def __init__(self, enabled: bool, inference: bool | None = None) -> None:
        self.enabled = enabled
        self.inference = inference  # None: leave the inference flag as it is

    def __enter__(self) -> None:
        self._previous = (_state.enabled, _state.inference)
        _state.enabled = self.enabled
        if self.inference is not None:
            _state.inference = self.inference

    def __exit__(self, *exc_info: object) -> None:
        _state.enabled, _state.inference = self._previous

    def __call__(self, fn: F) -> F:
        enabled, inference = self.enabled, self.inference

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with _GradMode(enabled, inference):  # a fresh one per call: calls may overlap (threads, recursion)
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class no_grad(_GradMode):
    """Run without recording the graph (evaluation, parameter updates)."""

    def __init__(self) -> None:
        super().__init__(False)


class enable_grad(_GradMode):
    """Record the graph again, e.g. inside a function called under ``no_grad``."""

    def __init__(self) -> None:
        super().__init__(True)


class inference_mode(_GradMode):
    """``inference_mode()`` runs without recording, like ``no_grad``; ``inference_mode(False)`` inside
    it records again. tinynorm has no separate inference tensors: what is made inside is an ordinary
    tensor that does not require grad."""

    def __init__(self, mode: bool = True) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode: mode must be a bool, got {type(mode).__name__}")
        super().__init__(not mode, inference=mode)


class set_grad_enabled(_GradMode):
    """Turn recording on or off. As in PyTorch, ``set_grad_enabled(False)`` called on its own switches
    the mode at once; with ``with``, or as a decorator, the mode applies to the block or the calls."""

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled: mode must be a bool, got {type(mode).__name__}")
        super().__init__(mode)
        self._before_call = _state.enabled
        _state.enabled = mode

    def __enter__(self) -> None:
        self._previous = (self._before_call, _state.inference)

    def __call__(self, fn: F) -> F:
        _state.enabled = self._before_call  # a decorator: only the calls change the mode
        return super().__call__(fn)
