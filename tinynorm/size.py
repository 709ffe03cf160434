"""``tinynorm.Size``: a tensor's shape, a tuple of ints as ``torch.Size`` is."""
from __future__ import annotations

import math
import operator
from typing import Any, Iterable


class Size(tuple):
    """The shape of a tensor (``t.shape``, ``t.size()``): a tuple that prints as ``tinynorm.Size([2, 3])``,
    stays a ``Size`` when sliced or extended, and knows its ``numel()``."""

    __slots__ = ()

    def __new__(cls, sizes: Iterable[Any] = ()) -> "Size":
        items = tuple(sizes)
        for position, item in enumerate(items):
            try:
                operator.index(item)
            except TypeError:
                raise TypeError(f"Size() takes an iterable of 'int' (item {position} is "
                                f"'{type(item).__name__}')") from None
        return tuple.__new__(cls, (operator.index(item) for item in items))

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        return math.prod(self)

    def __getitem__(self, index: Any) -> Any:
        item = tuple.__getitem__(self, index)
        return tuple.__new__(Size, item) if isinstance(index, slice) else item

    def __add__(self, other: Any) -> "Size":
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(self) + tuple(other))

    def __repr__(self) -> str:
        return f"tinynorm.Size({list(self)})"

    __str__ = __repr__

    def __reduce__(self) -> tuple:
        return Size, (tuple(self),)


def as_size(shape: tuple) -> Size:
    """A backend array's shape (a tuple of ints) as a :class:`Size`, without checking it again:
    ``Tensor.shape`` calls this at every access."""
    return tuple.__new__(Size, shape)
