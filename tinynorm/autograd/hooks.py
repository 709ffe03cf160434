"""``RemovableHandle``: what registering a hook returns, to take the hook away again."""
from __future__ import annotations

from typing import Any


class RemovableHandle:
    """``handle.remove()`` removes the hook from the list or dict it was registered in (once; a second
    call does nothing). Also a context manager: the hook is removed at the end of the ``with`` block."""

    def __init__(self, registry: list | dict, key: Any) -> None:
        self._registry = registry
        self._key = key

    def remove(self) -> None:
        registry, self._registry = self._registry, None
        if isinstance(registry, dict):
            registry.pop(self._key, None)
        elif registry is not None and self._key in registry:
            registry.remove(self._key)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()
