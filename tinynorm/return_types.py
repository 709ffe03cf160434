"""The named pairs that ops returning ``(values, indices)`` give, as ``torch.return_types``:
``x.max(1).values``, ``values, indices = x.sort()``; ``aminmax`` gives ``(min, max)``."""
from __future__ import annotations

from collections import namedtuple


def _return_type(name: str, fields: tuple[str, str] = ("values", "indices")) -> type:
    """A named pair called ``name`` (of ``values`` and ``indices`` unless told), printed as PyTorch
    prints its own."""
    def __repr__(self: tuple) -> str:  # noqa: N807
        fields = ",\n".join(f"{field}={value!r}" for field, value in zip(self._fields, self))
        return f"tinynorm.return_types.{name}(\n{fields})"

    return type(name, (namedtuple(name, fields),),
                {"__slots__": (), "__repr__": __repr__, "__module__": __name__})


max = _return_type("max")  # noqa: A001  (PyTorch's names)
min = _return_type("min")  # noqa: A001
sort = _return_type("sort")
topk = _return_type("topk")
median = _return_type("median")
cummax = _return_type("cummax")
cummin = _return_type("cummin")
aminmax = _return_type("aminmax", ("min", "max"))
