"""``default_collate``: a list of samples into one batch, as ``torch.utils.data.default_collate`` does.

The batch keeps the samples' structure and stacks its leaves along a new first dimension: tensors
and numpy arrays stack into a tensor, Python floats give a float64 tensor, ints an int64 one (bools a
bool one), numpy scalars a tensor of their dtype; strings and bytes stay a list; dicts, named tuples
and sequences are collated key by key or position by position (a tuple of fields becomes a list).
``default_convert`` is what a ``DataLoader`` with ``batch_size=None`` applies to each sample: numpy
arrays and scalars become tensors, nothing is stacked.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np

from ...ops import stack
from ...tensor import Tensor, as_tensor, tensor

__all__ = ["default_collate", "default_convert"]

COLLATE_ERROR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}")


def default_collate(batch: Sequence[Any]) -> Any:
    """Collate ``batch`` (a list of samples of one structure) into a batch of that structure."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        if _holds_text_or_objects(elem):
            raise TypeError(COLLATE_ERROR.format(elem.dtype))
        return default_collate([as_tensor(array) for array in batch])
    if isinstance(elem, (np.bool_, np.number)):
        return tensor(np.array(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=np.float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, Mapping):
        return _same_mapping(elem, {key: default_collate([sample[key] for sample in batch]) for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a named tuple
        return type(elem)(*(default_collate(list(field)) for field in zip(*batch)))
    if isinstance(elem, Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("default_collate: each element in list of batch should be of equal size")
        fields = [default_collate(list(field)) for field in zip(*batch)]
        return fields if isinstance(elem, tuple) else _same_sequence(elem, fields)
    raise TypeError(COLLATE_ERROR.format(type(elem)))


def default_convert(data: Any) -> Any:
    """``data`` with its numpy arrays and scalars turned into tensors, structure kept (tuples become lists)."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if _holds_text_or_objects(data) else as_tensor(data)
    if isinstance(data, (np.bool_, np.number)):
        return as_tensor(data)
    if isinstance(data, Mapping):
        return _same_mapping(data, {key: default_convert(value) for key, value in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(item) for item in data))
    if isinstance(data, tuple):
        return [default_convert(item) for item in data]
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        return _same_sequence(data, [default_convert(item) for item in data])
    return data


def _holds_text_or_objects(array: np.ndarray) -> bool:
    return array.dtype.kind in "SaUO"


def _same_mapping(template: Mapping, items: dict) -> Any:
    """``items`` in a mapping of ``template``'s type where that type can be rebuilt, else a dict."""
    if isinstance(template, MutableMapping):
        clone = copy.copy(template)
        clone.update(items)
        return clone
    try:
        return type(template)(items)
    except TypeError:
        return items


def _same_sequence(template: Sequence, items: list) -> Any:
    try:
        return type(template)(items)
    except TypeError:
        return items
