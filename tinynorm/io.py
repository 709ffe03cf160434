"""Checkpoints: ``save(obj, path)`` and ``load(path)`` for state dicts of models and optimizers.

``obj`` is any nesting of dicts (str or int keys), lists and tuples whose leaves are tensors, numpy
arrays and scalars, Python numbers, strings and None. The file is one ``.npz`` (a zip of ``.npy``
files): each array leaf is a member named by a number, and the tree's shape is JSON, stored as
bytes in the member ``__tinynorm__``, with ``{"tensor": "3"}`` where the array of member ``3`` goes.

Why not pickle, as ``torch.save`` does: unpickling a file can run any code its author wrote into it.
``load`` reads with ``np.load(..., allow_pickle=False)`` and parses JSON, so a checkpoint is only
ever data. Loaded tensors are on the CPU; ``load_state_dict`` moves values where they belong.
"""
from __future__ import annotations

import json
import os
import zipfile
import zlib
from collections import OrderedDict
from typing import Any

import numpy as np

from .tensor import Tensor

STRUCTURE_KEY = "__tinynorm__"
FORMAT = "tinynorm-checkpoint"
VERSION = 1
_PLAIN_TYPES = (type(None), bool, int, float, str)  # exact types: JSON keeps them apart
_MAPPINGS = {dict: "dict", OrderedDict: "OrderedDict"}
_SEQUENCES = {list: "list", tuple: "tuple"}
_LEAVES = {"tensor": Tensor, "ndarray": lambda array: array, "scalar": lambda array: array[()]}  # tag -> from array
# What reading a damaged or foreign file can raise inside numpy, zipfile and json.
_READ_ERRORS = (ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error, UnicodeDecodeError)


def save(obj: Any, path: str | os.PathLike) -> None:
    """Write ``obj`` (e.g. ``{'model': model.state_dict(), 'optim': opt.state_dict()}``) to ``path``.

    The file is written under a temporary name and then renamed, so a crash while saving never
    leaves a truncated checkpoint in place of the previous one. An object that appears several
    times (tied weights) is stored once and loads as one object.
    """
    path = os.fspath(path)
    arrays: dict[str, np.ndarray] = {}
    tree = _encode(obj, "obj", arrays, {})
    header = json.dumps({"format": FORMAT, "version": VERSION, "tree": tree})
    arrays[STRUCTURE_KEY] = np.frombuffer(header.encode("utf-8"), dtype=np.uint8)
    temporary = path + ".tmp"
    try:
        with open(temporary, "wb") as file:  # a file object: np.savez would append ".npz" to a name
            np.savez(file, **arrays)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def load(path: str | os.PathLike) -> Any:
    """Read an object written by :func:`save`. Tensors come back on the CPU, not requiring grad.

    Raises ``FileNotFoundError`` for a missing file and ``ValueError`` naming the file for anything
    that is not an intact tinynorm checkpoint (a pickle, a foreign ``.npz``, a damaged file).
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"load: no checkpoint file at {path!r}")
    try:
        contents = np.load(path, allow_pickle=False)
    except _READ_ERRORS as error:
        raise ValueError(f"load: {path!r} is not a tinynorm checkpoint (not a readable .npz file: {error})") from error
    if not isinstance(contents, np.lib.npyio.NpzFile):
        raise ValueError(f"load: {path!r} holds a single numpy array (.npy), not a tinynorm checkpoint")
    with contents:
        if STRUCTURE_KEY not in contents.files:
            raise ValueError(
                f"load: {path!r} is an .npz file but not a tinynorm checkpoint (no {STRUCTURE_KEY!r} entry)"
            )
        try:
            header = json.loads(contents[STRUCTURE_KEY].tobytes().decode("utf-8"))
            arrays = {name: contents[name] for name in contents.files if name != STRUCTURE_KEY}
        except _READ_ERRORS as error:
            raise ValueError(f"load: {path!r} is a damaged checkpoint: {type(error).__name__}: {error}") from error
    if not isinstance(header, dict) or header.get("format") != FORMAT or "tree" not in header:
        raise ValueError(f"load: {path!r} has a {STRUCTURE_KEY!r} entry that is not a tinynorm checkpoint header")
    if header.get("version") != VERSION:
        raise ValueError(f"load: {path!r} is checkpoint format version {header.get('version')!r}; "
                         f"this tinynorm reads version {VERSION}")
    return _decode(header["tree"], "obj", arrays, {}, path)


def _encode(obj: Any, where: str, arrays: dict[str, np.ndarray], names: dict[int, str]) -> Any:
    """``obj`` as JSON-ready values, adding its arrays to ``arrays``; ``where`` is its key path."""
    kind = type(obj)
    if kind in _PLAIN_TYPES:
        return obj
    if kind in _SEQUENCES:
        return {_SEQUENCES[kind]: [_encode(item, f"{where}[{i}]", arrays, names) for i, item in enumerate(obj)]}
    if kind in _MAPPINGS:
        items = []
        for key, value in obj.items():
            if type(key) not in (str, int):
                raise TypeError(f"save: the dict at {where} has a key {key!r} of type {type(key).__name__}; "
                                "only str and int keys can be saved")
            items.append([key, _encode(value, f"{where}[{key!r}]", arrays, names)])
        return {_MAPPINGS[kind]: items}
    if isinstance(obj, Tensor):
        return {"tensor": _store(obj.numpy(), obj, where, arrays, names)}
    if isinstance(obj, np.ndarray):
        return {"ndarray": _store(obj, obj, where, arrays, names)}
    if isinstance(obj, np.generic):
        return {"scalar": _store(np.asarray(obj), obj, where, arrays, names)}
    raise TypeError(
        f"save: cannot save {where}, of type {kind.__name__}; supported are dict, list, tuple, Tensor, "
        "numpy arrays and scalars, int, float, bool, str and None"
    )


def _store(array: np.ndarray, owner: Any, where: str, arrays: dict[str, np.ndarray], names: dict[int, str]) -> str:
    """The member name of ``owner``'s array, adding it on first sight."""
    if array.dtype.hasobject:
        raise TypeError(f"save: cannot save {where}: an array of Python objects (dtype {array.dtype})")
    name = names.get(id(owner))
    if name is None:
        name = names[id(owner)] = str(len(arrays))
        arrays[name] = array
    return name


def _decode(node: Any, where: str, arrays: dict[str, np.ndarray], loaded: dict[str, Any], path: str) -> Any:
    """Rebuild the object that :func:`_encode` turned into ``node``."""
    if not isinstance(node, (dict, list)):
        return node
    if isinstance(node, dict) and len(node) == 1:
        (tag, value), = node.items()
        if tag in ("list", "tuple") and isinstance(value, list):
            items = [_decode(item, f"{where}[{i}]", arrays, loaded, path) for i, item in enumerate(value)]
            return items if tag == "list" else tuple(items)
        if tag in ("dict", "OrderedDict") and isinstance(value, list):
            mapping = {} if tag == "dict" else OrderedDict()
            for pair in value:
                if not (isinstance(pair, list) and len(pair) == 2 and type(pair[0]) in (str, int)):
                    break
                key, item = pair
                mapping[key] = _decode(item, f"{where}[{key!r}]", arrays, loaded, path)
            else:
                return mapping
        if tag in _LEAVES and value in arrays:
            if value not in loaded:
                loaded[value] = _LEAVES[tag](arrays[value])
            return loaded[value]
    raise ValueError(f"load: {path!r} is a damaged checkpoint: cannot read the structure at {where}: {node!r:.200}")
