"""Array operations, one module per device.

Every op in ``tinynorm.ops`` asks for the backend of its inputs' device (``ctx.xp``) and calls array
functions on it by name: ``xp.exp(a)``, ``xp.matmul(a, b)``, ``xp.layer_norm_forward(...)``. Those names,
their signatures and meanings are declared once, in :mod:`tinynorm.backends.contract` (the
:class:`~tinynorm.backends.contract.Backend` protocol), which also says where each backend implements
them: the CPU backend (:mod:`.cpu`) is numpy plus tinynorm's Numba kernels, the CUDA backend
(:mod:`.cuda`) one module per family for device arrays. Ops never import numpy or CUDA themselves, which
is what lets a new device plug in.

``mps`` and ``cudnn`` are PyTorch's ``torch.backends.mps``/``torch.backends.cudnn`` for scripts that
ask about them: tinynorm has neither (see their docstrings).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # the declaration, for readers and editors; nothing needs it at run time
    from .contract import Backend

_MODULES = {"cpu": "tinynorm.backends.cpu", "cuda": "tinynorm.backends.cuda"}
_loaded: dict[str, Any] = {}  # device name -> backend module


def canonical_device(device: object) -> str:
    """``'cpu'``, ``'cuda'`` or ``'cuda:0'`` to the device name tinynorm uses (``'cpu'`` or ``'cuda'``)."""
    name = str(device).split(":")[0]
    if name not in _MODULES:
        raise ValueError(f"device must be one of {sorted(_MODULES)}, got {device!r}")
    return name


def get_backend(device: str) -> Backend:
    """The backend module for ``device`` (imported on first use), which provides :class:`Backend`."""
    backend = _loaded.get(device)
    if backend is None:
        try:
            backend = importlib.import_module(_MODULES[canonical_device(device)])
        except ImportError as error:
            raise RuntimeError(f"device {device!r} is not available: {error}") from error
        _loaded[device] = backend
    return backend


def is_basic_index(index: Any) -> bool:
    """Whether ``index`` only holds ints, slices, ``None`` and ``...`` (numpy's basic indexing, which
    gives a view and never selects an element twice). Bools and arrays are advanced indexing."""
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, slice)
               or (isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))) for i in items)


def indices_out_of_range(indices: np.ndarray, upper: int, ignore_index: int | None = None) -> np.ndarray:
    """True where an entry of the host array ``indices`` is outside ``[0, upper)`` and is not
    ``ignore_index``: what an op reports, on a host copy, once a backend's ``count_indices`` found some."""
    outside = (indices < 0) | (indices >= upper)
    return outside if ignore_index is None else outside & (indices != ignore_index)


from . import cudnn, mps  # noqa: E402  (PyTorch's torch.backends.* names)
