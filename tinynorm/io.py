"""Checkpoints: ``save(obj, f)`` and ``load(f, map_location=None, weights_only=True)``.

``obj`` is any nesting of dicts (str or int keys), lists and tuples whose leaves are tensors, numpy
arrays and scalars, Python numbers, strings and None. The file is one ``.npz`` (a zip of ``.npy``
files): each array leaf is a member named by a number, and the tree's shape is JSON, stored as
bytes in the member ``__tinynorm__``, with ``{"tensor": "3"}`` where the array of member ``3`` goes.

Why not pickle, as ``torch.save`` does: unpickling a file can run any code its author wrote into it.
``load`` parses JSON and ``.npy`` headers and never unpickles, so a checkpoint is only ever data; it
also reads PyTorch's own zip checkpoints (``.pt``/``.pth`` state dicts) through a restricted unpickler
that cannot run code (:mod:`tinynorm.torch_checkpoint`). Work is bounded by the file's size whatever
the file declares (:mod:`tinynorm.archive`).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import secrets
import stat
import zipfile
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

import numpy as np

from . import torch_checkpoint
from .archive import NPY_MAGIC, CheckpointError, check_member, read_npy
from .backends import canonical_device
from .tensor import Tensor, resolve_device

STRUCTURE_KEY = "__tinynorm__"
FORMAT = "tinynorm-checkpoint"
VERSION = 1
MAX_DEPTH = 256  # how deeply dicts, lists and tuples may nest, saving and loading
MAX_HEADER_BYTES = 256 * 2**20
_PLAIN_TYPES = (type(None), bool, int, float, str)  # exact types: JSON keeps them apart
_MAPPINGS = {dict: "dict", OrderedDict: "OrderedDict"}
_SEQUENCES = {list: "list", tuple: "tuple"}
_LEAVES = {"tensor": Tensor, "ndarray": lambda array: array, "scalar": lambda array: array[()]}  # tag -> from array
# What reading a damaged or foreign file can raise inside zipfile, zlib and json.
_READ_ERRORS = (ValueError, EOFError, KeyError, OSError, zipfile.BadZipFile, zlib.error, UnicodeDecodeError)
Placement = Callable[[Tensor, str], Tensor]


# ----------------------------------------------------------------------------------- saving
def save(obj: Any, f: str | os.PathLike | BinaryIO) -> None:
    """Write ``obj`` (e.g. ``{'model': model.state_dict(), 'optim': opt.state_dict()}``) to ``f``, a path or a
    binary file object.

    A path is written under a fresh temporary name in its directory and then renamed over the old
    file, so a failure while saving (a full disk, Ctrl-C) never leaves a truncated checkpoint in
    place of the previous one; saving through a symbolic link replaces the file it points to and
    keeps the link. An object that appears several times (tied weights) is stored once and loads as
    one object.
    """
    arrays: dict[str, np.ndarray] = {}
    tree = _encode(obj, "obj", arrays, {}, set())
    header = json.dumps({"format": FORMAT, "version": VERSION, "tree": tree})
    arrays[STRUCTURE_KEY] = np.frombuffer(header.encode("utf-8"), dtype=np.uint8)
    if hasattr(f, "write"):
        np.savez(f, **arrays)
    else:
        _replace_atomically(os.fspath(f), lambda file: np.savez(file, **arrays))


def _replace_atomically(path: str, write: Callable[[BinaryIO], None]) -> None:
    """Write a new file with ``write`` and rename it to ``path`` (the target of ``path`` when it is a
    symbolic link), keeping an existing file's permissions; on any failure the old file is untouched."""
    target = os.path.realpath(path)
    mode = stat.S_IMODE(os.stat(target).st_mode) if os.path.exists(target) else None
    descriptor, temporary = _new_file_beside(target)
    try:
        with os.fdopen(descriptor, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())  # the data is on disk before the rename makes it the checkpoint
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


def _new_file_beside(target: str) -> tuple[int, str]:
    """Create a file of a fresh random name in ``target``'s directory (never an existing file: O_EXCL),
    with the permissions a new file gets (0o666 less the umask); returns its descriptor and name."""
    directory, name = os.path.split(target)
    for _ in range(100):
        temporary = os.path.join(directory, f".{name}.{secrets.token_hex(8)}.tmp")
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
            return os.open(temporary, flags, 0o666), temporary
        except FileExistsError:
            continue
    raise FileExistsError(f"save: could not find a free temporary name in {directory!r}")


def _encode(obj: Any, where: str, arrays: dict[str, np.ndarray], names: dict[int, str], open_: set[int]) -> Any:
    """``obj`` as JSON-ready values, adding its arrays to ``arrays``; ``where`` is its key path and
    ``open_`` the containers being encoded around it (to refuse cycles and bound the depth)."""
    kind = type(obj)
    if kind in _PLAIN_TYPES:
        return obj
    if kind in _SEQUENCES or kind in _MAPPINGS:
        if id(obj) in open_:
            raise ValueError(f"save: {where:.200} contains itself (a reference cycle), which cannot be saved")
        if len(open_) >= MAX_DEPTH:
            raise ValueError(f"save: the object nests dicts, lists and tuples more than {MAX_DEPTH} deep "
                             f"(at {where:.200}...)")
        open_.add(id(obj))
        try:
            return _encode_container(obj, where, arrays, names, open_)
        finally:
            open_.discard(id(obj))
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


def _encode_container(obj: Any, where: str, arrays: dict[str, np.ndarray], names: dict[int, str],
                      open_: set[int]) -> Any:
    kind = type(obj)
    if kind in _SEQUENCES:
        return {_SEQUENCES[kind]: [_encode(item, f"{where}[{i}]", arrays, names, open_) for i, item in enumerate(obj)]}
    items = []
    for key, value in obj.items():
        if type(key) not in (str, int):
            raise TypeError(f"save: the dict at {where} has a key {key!r} of type {type(key).__name__}; "
                            "only str and int keys can be saved")
        items.append([key, _encode(value, f"{where}[{key!r}]", arrays, names, open_)])
    return {_MAPPINGS[kind]: items}


def _store(array: np.ndarray, owner: Any, where: str, arrays: dict[str, np.ndarray], names: dict[int, str]) -> str:
    """The member name of ``owner``'s array, adding it on first sight."""
    if array.dtype.hasobject:
        raise TypeError(f"save: cannot save {where}: an array of Python objects (dtype {array.dtype})")
    name = names.get(id(owner))
    if name is None:
        name = names[id(owner)] = str(len(arrays))
        arrays[name] = array
    return name


# ---------------------------------------------------------------------------------- loading
def load(f: str | os.PathLike | BinaryIO, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = True, mmap: bool | None = None) -> Any:
    """Read a checkpoint written by :func:`save`, or a PyTorch state dict written by ``torch.save``.

    ``map_location`` puts the tensors on a device, as in PyTorch: ``'cpu'``, ``'cuda'`` (or a device
    object), a dict from saved locations to devices (``{'cuda:0': 'cpu'}``), or a function
    ``(tensor, location) -> tensor or None``. Without it, a tinynorm checkpoint's tensors load on the
    CPU (its files hold values, not devices) and a PyTorch file's where they were saved. A tinynorm
    checkpoint's tensors do not require grad; a PyTorch file's keep their ``requires_grad``, and its
    ``nn.Parameter`` objects load as tinynorm Parameters.

    ``weights_only=True`` (PyTorch's default) is the only mode: tinynorm never unpickles arbitrary
    objects. ``FileNotFoundError`` for a missing file; ``ValueError`` naming the file and saying
    what it is for anything that is not an intact checkpoint.
    """
    if weights_only is False:
        raise ValueError("load: weights_only=False would unpickle arbitrary objects, which can run any code the "
                         "file's author wrote; tinynorm loads only tensors and plain containers (weights_only=True)")
    if pickle_module is not None:
        raise ValueError("load: pickle_module is not supported; tinynorm reads checkpoints without unpickling code")
    if mmap:
        raise ValueError("load: mmap=True is not supported; the file is read into memory")
    if hasattr(f, "read"):
        seekable = hasattr(f, "seekable") and f.seekable()
        name = f"<{type(f).__name__}>"
        return _load_file(f if seekable else io.BytesIO(f.read()), name, _placement(map_location, name))
    path = os.fspath(f)
    place = _placement(map_location, path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"load: no checkpoint file at {path!r}")
    with open(path, "rb") as file:
        return _load_file(file, path, place)


def _load_file(file: BinaryIO, name: str, place: Placement) -> Any:
    """The object in ``file`` (called ``name`` in messages), whichever supported format it is."""
    position = file.tell()
    start = file.read(len(torch_checkpoint.LEGACY_MAGIC))
    file.seek(position)
    if start.startswith(torch_checkpoint.LEGACY_MAGIC):
        raise CheckpointError(f"load: {name!r} is a PyTorch checkpoint in the legacy format (before PyTorch 1.6), "
                              "which tinynorm does not read; re-save it in PyTorch's zip format: "
                              "torch.save(torch.load(path), new_path) with PyTorch 1.6 or later")
    if start.startswith(NPY_MAGIC):
        raise CheckpointError(f"load: {name!r} holds a single numpy array (.npy), not a tinynorm checkpoint")
    try:
        archive = zipfile.ZipFile(file)
    except _READ_ERRORS as error:
        what = "a pickle file, which tinynorm never unpickles" if start[:1] == b"\x80" else "not a zip archive"
        raise CheckpointError(f"load: {name!r} is not a tinynorm checkpoint ({what}: {error})") from None
    with archive:
        try:
            names = archive.namelist()
            if STRUCTURE_KEY + ".npy" in names:
                return _load_tinynorm(archive, name, place)
            if torch_checkpoint.is_torch_archive(names):
                return torch_checkpoint.load(archive, name, place)
        except CheckpointError:
            raise
        except _READ_ERRORS as error:
            raise CheckpointError(f"load: {name!r} is a damaged checkpoint: {type(error).__name__}: {error}") from None
    raise CheckpointError(f"load: {name!r} is a zip archive but not a tinynorm checkpoint (no {STRUCTURE_KEY!r} "
                          "entry) and not a PyTorch one (no data.pkl)")


def _load_tinynorm(archive: zipfile.ZipFile, name: str, place: Placement) -> Any:
    members = {info.filename[: -len(".npy")]: info for info in archive.infolist() if info.filename.endswith(".npy")}
    header_info = members.pop(STRUCTURE_KEY)
    check_member(header_info, name)
    if header_info.file_size > MAX_HEADER_BYTES:
        raise CheckpointError(f"load: {name!r} has a {header_info.file_size}-byte structure entry; at most "
                              f"{MAX_HEADER_BYTES} bytes are read")
    text = read_npy(archive, header_info, name).tobytes()
    try:
        header = json.loads(text.decode("utf-8"))
    except RecursionError:  # json nests one Python call per bracket: a header nested ~1000 deep
        raise CheckpointError(f"load: {name!r} is damaged: its structure nests more than {MAX_DEPTH} deep") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise CheckpointError(f"load: {name!r} is a damaged checkpoint: its structure is not JSON ({error})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT or "tree" not in header:
        raise CheckpointError(f"load: {name!r} has a {STRUCTURE_KEY!r} entry that is not a tinynorm checkpoint header")
    if header.get("version") != VERSION:
        raise CheckpointError(f"load: {name!r} is checkpoint format version {header.get('version')!r}; "
                              f"this tinynorm reads version {VERSION}")
    arrays = {member: read_npy(archive, info, name) for member, info in members.items()}
    return _decode(header["tree"], "obj", _Leaves(arrays, name, place), 0)


class _Leaves:
    """The arrays of a checkpoint being loaded, each turned into its leaf once (shared leaves stay shared)."""

    def __init__(self, arrays: dict[str, np.ndarray], name: str, place: Placement) -> None:
        self.arrays, self.name, self.place = arrays, name, place
        self.loaded: dict[str, Any] = {}

    def get(self, tag: str, member: Any) -> Any:
        if member not in self.loaded:
            leaf = _LEAVES[tag](self.arrays[member])
            self.loaded[member] = self.place(leaf, "cpu") if isinstance(leaf, Tensor) else leaf
        return self.loaded[member]


def _decode(node: Any, where: str, leaves: _Leaves, depth: int) -> Any:
    """Rebuild the object that :func:`_encode` turned into ``node``."""
    if not isinstance(node, (dict, list)):
        return node
    if depth >= MAX_DEPTH:
        raise CheckpointError(f"load: {leaves.name!r} is damaged: its structure nests more than {MAX_DEPTH} deep")
    if isinstance(node, dict) and len(node) == 1:
        (tag, value), = node.items()
        if tag in ("list", "tuple") and isinstance(value, list):
            items = [_decode(item, f"{where}[{i}]", leaves, depth + 1) for i, item in enumerate(value)]
            return items if tag == "list" else tuple(items)
        if tag in ("dict", "OrderedDict") and isinstance(value, list):
            mapping = {} if tag == "dict" else OrderedDict()
            for pair in value:
                if not (isinstance(pair, list) and len(pair) == 2 and type(pair[0]) in (str, int)):
                    break
                key, item = pair
                mapping[key] = _decode(item, f"{where}[{key!r}]", leaves, depth + 1)
            else:
                return mapping
        if tag in _LEAVES and isinstance(value, str) and value in leaves.arrays:
            return leaves.get(tag, value)
    raise CheckpointError(f"load: {leaves.name!r} is a damaged checkpoint: cannot read the structure at "
                          f"{where:.200}: {node!r:.200}")


# ----------------------------------------------------------------------------- map_location
def _placement(map_location: Any, name: str) -> Placement:
    """``map_location`` as a function ``(tensor on the CPU, saved location) -> tensor where it belongs``
    (``name`` is the file's, for messages)."""
    if map_location is None:
        return lambda tensor, location: _move(tensor, location, name)
    if isinstance(map_location, Mapping):
        return lambda tensor, location: _move(tensor, map_location.get(location, location), name)
    if callable(map_location) and not isinstance(map_location, str):
        def place(tensor: Tensor, location: str) -> Tensor:
            result = map_location(tensor, location)
            if result is None:
                return _move(tensor, location, name)
            if not isinstance(result, Tensor):
                raise TypeError(f"load: map_location returned a {type(result).__name__}; expected a tensor or None")
            return result
        return place
    device = str(map_location)
    canonical_device(device)  # a clear error now for a bad device name
    return lambda tensor, location: _move(tensor, device, name)


def _move(tensor: Tensor, location: Any, name: str) -> Tensor:
    """``tensor`` on the device that ``location`` names (a PyTorch location string or a device)."""
    try:
        device = canonical_device(str(location))
    except ValueError:
        raise CheckpointError(f"load: {name!r} holds tensors saved on {location!r}, which tinynorm does not have; "
                              "pass map_location='cpu'") from None
    if device == tensor.device:
        return tensor
    try:
        resolve_device(device)
    except RuntimeError as error:
        raise RuntimeError(f"load: {name!r} holds tensors saved on {location!r}, which is not usable here ({error}); "
                           "pass map_location='cpu' to load them on the CPU") from None
    return tensor.to(device)
