"""Whether operations record the autograd graph: ``no_grad``, ``enable_grad``, ``set_grad_enabled``.

Inside ``no_grad()`` every op runs without recording anything, even if its inputs require grad: use it
for evaluation and for optimizer updates. Both work as context managers and as decorators.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_enabled = True


def is_grad_enabled() -> bool:
    """True when new operations are recorded for backward."""
    return _enabled


class set_grad_enabled:
    """Turn graph recording on or off, for a ``with`` block or for a decorated function."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._previous: list[bool] = []

    def __enter__(self) -> None:
        global _enabled
        self._previous.append(_enabled)
        _enabled = self.mode

    def __exit__(self, *exc_info: object) -> None:
        global _enabled
        _enabled = self._previous.pop()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(self.mode):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class no_grad(set_grad_enabled):
    """Run without recording the graph (evaluation, parameter updates)."""

    def __init__(self) -> None:
        super().__init__(False)


class enable_grad(set_grad_enabled):
    """Record the graph again, e.g. inside a function called under ``no_grad``."""

    def __init__(self) -> None:
        super().__init__(True)
