"""Containers, as PyTorch's: ``Sequential`` (call in order), ``ModuleList`` and ``ModuleDict`` (hold
submodules), ``ParameterList`` and ``ParameterDict`` (hold parameters).

Submodules and parameters a container holds are registered, so the parent module's ``parameters()``,
``state_dict()``, ``to()`` and ``train()`` see them (a plain list or dict would hide them). Names are
PyTorch's: ``"0"``, ``"1"`` ... (renumbered after a deletion), or the given keys.
"""
from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain, islice
from typing import Any

from ..tensor import Tensor
from .module import Module, Parameter, indent


def _absolute(idx: Any, length: int) -> int:
    """``idx`` as an index in [0, length), or PyTorch's IndexError."""
    idx = operator.index(idx)
    if not -length <= idx < length:
        raise IndexError(f"index {idx} is out of range")
    return idx % length


class _Numbered(Module):
    """What Sequential and ModuleList share: modules named "0", "1", ... in order."""

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def _key(self, idx: Any) -> str:
        return list(self._modules)[_absolute(idx, len(self))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, self._key(idx), module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)[idx] if isinstance(idx, slice) else [self._key(idx)]
        for key in keys:
            delattr(self, key)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))  # renumber

    def append(self, module: Module) -> Any:
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key: int | slice) -> Any:
        value = self[key]
        del self[key]
        return value

    def _insert(self, index: int, module: Module) -> None:
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module


class Sequential(_Numbered):
    """Calls its modules in order, each on the previous one's output: ``Sequential(a, b, c)`` or
    ``Sequential(OrderedDict([('name', a), ...]))`` for named steps."""

    def __init__(self, *args: Module) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for index, module in enumerate(args):
                self.add_module(str(index), module)

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        return next(islice(self._modules.values(), _absolute(idx, len(self)), None))

    def __add__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return Sequential(*self, *other)

    def __iadd__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        for module in list(other):
            self.append(module)
        return self

    def __mul__(self, other: int) -> "Sequential":
        _check_factor(self, other)
        return Sequential(*(list(self) * other))

    __rmul__ = __mul__

    def __imul__(self, other: int) -> "Sequential":
        _check_factor(self, other)
        for module in list(self) * (other - 1):
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> "Sequential":
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        self._insert(index + n if index < 0 else index, module)
        return self

    def extend(self, sequential: Iterable[Module]) -> "Sequential":
        for layer in sequential:
            self.append(layer)
        return self


def _check_factor(sequential: Sequential, other: Any) -> None:
    if not isinstance(other, int):
        raise TypeError(f"unsupported operand type(s) for *: {type(sequential)} and {type(other)}")
    if other <= 0:
        raise ValueError(f"Non-positive multiplication factor {other} for {type(sequential)}")


class ModuleList(_Numbered):
    """A list of modules whose parameters the parent module sees (a plain list would hide them)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])
        return self._modules[str(_absolute(idx, len(self)))]

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> "ModuleList":
        return ModuleList(chain(self, other))

    def insert(self, index: int, module: Module) -> None:
        self._insert(index, module)

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        if not isinstance(modules, Iterable):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got {type(modules).__name__}")
        for module in modules:
            self.append(module)
        return self

    def __repr__(self) -> str:
        """PyTorch's: runs of equal modules print once, as ``(0-2): 3 x Linear(...)``."""
        reprs = [repr(module) for module in self]
        if not reprs:
            return type(self).__name__ + "()"
        runs: list[list] = []  # [first index, last index, repr]
        for i, text in enumerate(reprs):
            if runs and runs[-1][2] == text:
                runs[-1][1] = i
            else:
                runs.append([i, i, text])
        lines = [indent(f"({first}): {text}" if first == last else f"({first}-{last}): {last - first + 1} x {text}")
                 for first, last, text in runs]
        return type(self).__name__ + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules (string keys, insertion order) whose parameters the parent module sees."""

    def __init__(self, modules: Mapping[str, Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        value = self[key]
        del self[key]
        return value

    def keys(self) -> Any:
        return self._modules.keys()

    def items(self) -> Any:
        return self._modules.items()

    def values(self) -> Any:
        return self._modules.values()

    def update(self, modules: Any) -> None:
        """Add ``modules``: a mapping, or an iterable of (key, module) pairs."""
        for key, module in _pairs(modules, "ModuleDict", "ModuleDict.update", sort_dicts=False):
            self[key] = module


def _pairs(entries: Any, kind: str, method: str, sort_dicts: bool) -> Iterable[tuple[Any, Any]]:
    """(key, value) pairs of a mapping or of an iterable of pairs, with PyTorch's errors; ParameterDict
    sorts a plain dict's keys (``sort_dicts``), as PyTorch does."""
    if not isinstance(entries, Iterable):
        raise TypeError(f"{method} should be called with an iterable of key/value pairs, but got "
                        f"{type(entries).__name__}")
    if isinstance(entries, (OrderedDict, ModuleDict, ParameterDict)):
        return list(entries.items())
    if isinstance(entries, Mapping):
        return sorted(entries.items()) if sort_dicts else list(entries.items())
    pairs = []
    for j, pair in enumerate(entries):
        if not isinstance(pair, Iterable):
            raise TypeError(f"{kind} update sequence element #{j} should be Iterable; is{type(pair).__name__}")
        if len(pair) != 2:
            raise ValueError(f"{kind} update sequence element #{j} has length {len(pair)}; 2 is required")
        pairs.append((pair[0], pair[1]))
    return pairs


def _entry_repr(key: Any, value: Any, type_name: bool) -> str:
    """A ParameterList/ParameterDict entry as PyTorch prints it."""
    if not isinstance(value, Tensor):
        return f"  ({key}): Object of type: {type(value).__name__}"
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    dtype = tensor_type_name(value) if type_name else str(value.dtype)
    device = " (cuda:0)" if value.device == "cuda" else ""
    return f"  ({key}): {kind} containing: [{dtype} of size {'x'.join(str(n) for n in value.shape)}{device}]"


_TYPE_NAMES = {"float16": "Half", "float32": "Float", "float64": "Double", "int8": "Char", "uint8": "Byte",
               "int16": "Short", "int32": "Int", "int64": "Long", "bool": "Bool"}


def tensor_type_name(value: Tensor) -> str:
    """PyTorch's ``torch.typename`` of a tensor: ``torch.FloatTensor``, ``torch.cuda.LongTensor`` ..."""
    prefix = "torch.cuda." if value.device == "cuda" else "torch."
    return f"{prefix}{_TYPE_NAMES.get(value.dtype.name, value.dtype.name)}Tensor"


class ParameterList(Module):
    """A list of parameters the parent module sees; tensors put in become Parameters."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            out = self.__class__()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, str(_absolute(idx, len(self))))

    def __setitem__(self, idx: int, param: Any) -> None:
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, str(_absolute(idx, len(self))), param)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter([self[i] for i in range(len(self))])

    def __iadd__(self, parameters: Iterable[Any]) -> "ParameterList":
        return self.extend(parameters)

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def append(self, value: Any) -> "ParameterList":
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> "ParameterList":
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got {type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_entry_repr(k, p, type_name=False) for k, p in enumerate(self))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """A dict of parameters (string keys) the parent module sees; tensors put in become Parameters."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _attr(key: Any) -> str:
        if not isinstance(key, str):
            raise TypeError(f"Index given to ParameterDict cannot be used as a key as it is not a string (type is "
                            f"'{type(key).__name__}'). Open an issue on github if you need non-string keys.")
        return key

    def __getitem__(self, key: str) -> Any:
        return getattr(self, self._attr(key))

    def __setitem__(self, key: str, value: Any) -> None:
        attr = self._attr(key)
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, self._attr(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def copy(self) -> "ParameterDict":
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for key in list(self._keys):
            del self[key]

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        key = next(reversed(list(self._keys)))
        return key, self.pop(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> "ParameterDict":
        return ParameterDict((k, default) for k in keys)

    def keys(self) -> Any:
        return self._keys.keys()

    def items(self) -> Iterator[tuple[str, Any]]:
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterator[Any]:
        return (self[k] for k in self._keys)

    def update(self, parameters: Any) -> None:
        """Add ``parameters``: an OrderedDict or ParameterDict (in order), a dict (sorted by key, as
        PyTorch does), or an iterable of (key, value) pairs."""
        for key, value in _pairs(parameters, "ParameterDict", "ParametersDict.update", sort_dicts=True):
            self[key] = value

    def __or__(self, other: "ParameterDict") -> "ParameterDict":
        combined = self.copy()
        combined.update(other)
        return combined

    def __ror__(self, other: "ParameterDict") -> "ParameterDict":
        combined = other.copy()
        combined.update(self)
        return combined

    def __ior__(self, other: "ParameterDict") -> "ParameterDict":
        self.update(other)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_entry_repr(k, p, type_name=True) for k, p in self.items())

    def __call__(self, input: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")
