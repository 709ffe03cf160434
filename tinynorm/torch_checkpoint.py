"""Reading ``torch.save`` checkpoints (PyTorch's zip format) without PyTorch and without running code.

A PyTorch checkpoint is a zip archive: ``<name>/data.pkl`` is a pickle of the object, and each tensor
storage is a raw record ``<name>/data/<key>``. Unpickling normally imports and calls whatever the
pickle names, which is how a hostile file runs code. Here the pickle is read by a restricted
unpickler that knows only what a state dict needs: tinynorm's own stand-ins for PyTorch's
tensor-rebuild functions and storage types, ``collections.OrderedDict``, ``torch.Size`` and
``torch.device``, on top of pickle's plain values (numbers, strings, bytes, lists, tuples, dicts,
None). Any other global (``os.system``, ``builtins.eval``, a model class) is refused before it is
looked up, and so are the opcodes that create instances of arbitrary classes.

Tensors come back as tinynorm tensors with PyTorch's values, dtypes, shapes, strides and storage
offsets; tensors that share a storage in the file share memory after loading (on the CPU).
"""
from __future__ import annotations

import io
import pickle
import zipfile
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from .archive import CheckpointError, read_record
from .tensor import Tensor

MAX_PICKLE_BYTES = 256 * 2**20
LEGACY_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"  # pickled 0x1950a86a20f9469cfc6c

_DTYPES = {  # PyTorch's dtype names -> numpy's; None: a dtype tinynorm does not have
    "float32": np.float32, "float64": np.float64, "float16": np.float16, "int64": np.int64, "int32": np.int32,
    "int16": np.int16, "int8": np.int8, "uint8": np.uint8, "bool": np.bool_, "bfloat16": None,
    "complex64": None, "complex128": None, "uint16": None, "uint32": None, "uint64": None,
}
_STORAGES = {  # the typed storage classes of PyTorch's pickles -> the dtype they hold
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16", "LongStorage": "int64",
    "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool", "BFloat16Storage": "bfloat16", "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128", "UntypedStorage": "uint8",
}


class TorchDtype:
    """A PyTorch dtype named in a pickle (``torch.float32``), or the dtype of a storage class."""

    def __init__(self, name: str) -> None:
        self.name = name

    def numpy(self, file: str) -> np.dtype:
        dtype = _DTYPES[self.name]
        if dtype is None:
            raise CheckpointError(f"load: {file!r} holds a tensor of dtype torch.{self.name}, which tinynorm does "
                                  "not have; convert it in PyTorch first, e.g. {k: v.float() for k, v in "
                                  "state_dict.items()}")
        return np.dtype(dtype)


class Storage:
    """One storage of the file: its values as a flat numpy array, and the device it was saved from."""

    def __init__(self, array: np.ndarray, location: str) -> None:
        self.array, self.location = array, location


def is_torch_archive(names: list[str]) -> bool:
    return any(name == "data.pkl" or name.endswith("/data.pkl") for name in names)


def load(archive: zipfile.ZipFile, file: str, place: Callable[[Tensor, str], Tensor]) -> Any:
    """The object in PyTorch zip archive ``archive`` (named ``file`` in messages); ``place(tensor, location)``
    puts each tensor where ``map_location`` says."""
    names = archive.namelist()
    if any(name.endswith("constants.pkl") for name in names):
        raise CheckpointError(f"load: {file!r} is a TorchScript archive (torch.jit.save), not a state dict; in "
                              "PyTorch, torch.save(torch.jit.load(path).state_dict(), new_path)")
    pickle_name = next(name for name in names if name == "data.pkl" or name.endswith("/data.pkl"))
    prefix = pickle_name[: -len("data.pkl")]
    byteorder = "little"
    if prefix + "byteorder" in names:
        byteorder = bytes(read_record(archive, archive.getinfo(prefix + "byteorder"), file)).decode("ascii", "replace")
        if byteorder not in ("little", "big"):
            raise _damaged(file, f"its byteorder record says {byteorder!r}")
    info = archive.getinfo(pickle_name)
    if info.file_size > MAX_PICKLE_BYTES:
        raise CheckpointError(f"load: {file!r} has a {info.file_size}-byte data.pkl; a state dict's is far "
                              f"smaller (at most {MAX_PICKLE_BYTES} bytes are read)")
    unpickler = _Unpickler(io.BytesIO(read_record(archive, info, file)), archive, prefix, byteorder, file, place)
    try:
        return unpickler.load()
    except CheckpointError:
        raise
    except _Placing as placing:  # map_location's own error: not the file's fault
        raise placing.error from None
    except Exception as error:  # pickle's own errors for a damaged stream: UnpicklingError, EOFError, ...
        raise _damaged(file, f"{type(error).__name__}: {error}") from None


class _Unpickler(pickle._Unpickler):
    """Python's own unpickler (the readable pure-Python one), with every way to reach code closed:
    ``find_class`` knows a fixed list of names, ``REDUCE`` calls only what it returned, ``BUILD``
    sets no attributes, and the opcodes that instantiate arbitrary classes are refused."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, stream: io.BytesIO, archive: zipfile.ZipFile, prefix: str, byteorder: str, file: str,
                 place: Callable[[Tensor, str], Tensor]) -> None:
        super().__init__(stream)
        self.archive, self.prefix, self.byteorder, self.file, self.place = archive, prefix, byteorder, file, place
        self.storages: dict[str, Storage] = {}
        self.callables = {
            ("torch._utils", "_rebuild_tensor_v2"): self.rebuild_tensor,
            ("torch._utils", "_rebuild_tensor"): self.rebuild_tensor,
            ("torch._utils", "_rebuild_tensor_v3"): self.rebuild_tensor_v3,
            ("torch._utils", "_rebuild_parameter"): self.rebuild_parameter,
            ("torch._utils", "_rebuild_parameter_with_state"): self.rebuild_parameter,
            ("collections", "OrderedDict"): OrderedDict,
            ("torch", "Size"): tuple,
            ("torch", "device"): _device,
            ("_codecs", "encode"): _latin1_bytes,
        }
        self.allowed = set(map(id, self.callables.values()))

    # ------------------------------------------------------------------ names and storages
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self.callables:
            return self.callables[module, name]
        if module == "torch" and name in _DTYPES:
            return TorchDtype(name)
        if module == "torch" and name in _STORAGES:
            return TorchDtype(_STORAGES[name])
        raise CheckpointError(f"load: {self.file!r} is a PyTorch checkpoint that needs {module}.{name} to load, "
                              "which tinynorm refuses: it loads only tensors and plain containers of numbers and "
                              "strings, never code or classes; save a state dict instead: "
                              "torch.save(model.state_dict(), path)")

    def persistent_load(self, pid: Any) -> Storage:
        """A storage record, read once per key (tensors sharing a storage share its array)."""
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], TorchDtype)
                and isinstance(pid[2], str) and isinstance(pid[3], str) and _is_count(pid[4])):
            raise _damaged(self.file, f"unknown persistent id {pid!r:.100}")
        _, dtype, key, location, numel = pid
        if key not in self.storages:
            dtype = dtype.numpy(self.file)
            name = f"{self.prefix}data/{key}"
            if name not in self.archive.namelist():
                raise _damaged(self.file, f"no record {name!r}")
            raw = read_record(self.archive, self.archive.getinfo(name), self.file, numel * dtype.itemsize)
            array = np.frombuffer(raw, dtype=dtype.newbyteorder("<" if self.byteorder == "little" else ">"))
            self.storages[key] = Storage(array.astype(dtype, copy=False), location)
        return self.storages[key]

    # ------------------------------------------------------------------- rebuild functions
    def rebuild_tensor(self, storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any = False,
                       backward_hooks: Any = None, metadata: Any = None) -> Tensor:
        """A tensor viewing ``storage`` (PyTorch's ``_rebuild_tensor_v2``), its view checked to lie inside it."""
        if not isinstance(storage, Storage):
            raise _damaged(self.file, "a tensor without a storage")
        return self.view(storage.array, storage.location, offset, size, stride, requires_grad, backward_hooks)

    def rebuild_tensor_v3(self, storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any,
                          backward_hooks: Any, dtype: Any, metadata: Any = None) -> Tensor:
        """``_rebuild_tensor_v3``: the dtype is given apart from an untyped (byte) storage."""
        if not isinstance(storage, Storage) or not isinstance(dtype, TorchDtype):
            raise _damaged(self.file, "a tensor without a storage or dtype")
        dtype = dtype.numpy(self.file)
        if storage.array.nbytes % dtype.itemsize:
            raise _damaged(self.file, f"a {storage.array.nbytes}-byte storage viewed as {dtype}")
        array = storage.array.view(np.uint8).view(dtype)
        return self.view(array, storage.location, offset, size, stride, requires_grad, backward_hooks)

    def rebuild_parameter(self, data: Any, requires_grad: Any, backward_hooks: Any, state: Any = None) -> Tensor:
        """An ``nn.Parameter`` (PyTorch's ``_rebuild_parameter``) as a tinynorm Parameter."""
        from .nn.module import Parameter  # nn builds on much of tinynorm; only needed here
        if not isinstance(data, Tensor) or not isinstance(requires_grad, bool) or state not in (None, {}):
            raise CheckpointError(f"load: {self.file!r} holds a parameter that is not a plain tensor")
        _check_no_hooks(backward_hooks, self.file)
        return Parameter(data, requires_grad=requires_grad and data.dtype.kind == "f")

    def view(self, array: np.ndarray, location: str, offset: Any, size: Any, stride: Any, requires_grad: Any,
             backward_hooks: Any) -> Tensor:
        if not (_is_count(offset) and isinstance(size, tuple) and isinstance(stride, tuple) and len(size) == len(stride)
                and all(map(_is_count, size + stride)) and isinstance(requires_grad, bool)):
            raise _damaged(self.file, f"a tensor with offset {offset!r:.40}, size {size!r:.60} and stride "
                                      f"{stride!r:.60}")
        _check_no_hooks(backward_hooks, self.file)
        last = offset + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else offset - 1
        if last >= len(array) or offset > len(array):
            raise _damaged(self.file, f"a tensor of size {size} and stride {stride} at offset {offset} reaches past "
                                      f"its storage of {len(array)} elements")
        values = np.lib.stride_tricks.as_strided(array[offset:], shape=size,
                                                 strides=tuple(s * array.itemsize for s in stride))
        try:
            tensor = self.place(Tensor._from_array(values), location)
        except Exception as error:
            raise _Placing(error) from error
        return tensor.requires_grad_(True) if requires_grad and tensor.dtype.kind == "f" else tensor

    # ------------------------------------------------------------------------ opcodes
    def load_reduce(self) -> None:
        args, func = self.stack.pop(), self.stack[-1]
        if id(func) not in self.allowed or not isinstance(args, tuple):
            raise CheckpointError(f"load: {self.file!r} asks to call {func!r:.60}, which tinynorm refuses")
        self.stack[-1] = func(*args)

    def load_build(self) -> None:
        """``BUILD`` sets an object's attributes; PyTorch uses it only for a state dict's ``_metadata``
        (version numbers for its modules), which tinynorm does not need: dropped."""
        state, target = self.stack.pop(), self.stack[-1]
        if not isinstance(target, dict) or not isinstance(state, (dict, type(None))):
            raise CheckpointError(f"load: {self.file!r} asks to set the state of a {type(target).__name__}, which "
                                  "tinynorm refuses")

    def refuse_opcode(self) -> None:
        raise CheckpointError(f"load: {self.file!r} uses a pickle instruction that creates arbitrary objects, "
                              "which tinynorm refuses (a state dict never needs it)")

    dispatch[pickle.REDUCE[0]] = load_reduce
    dispatch[pickle.BUILD[0]] = load_build
    for _opcode in (pickle.INST, pickle.OBJ, pickle.NEWOBJ, pickle.NEWOBJ_EX, pickle.EXT1, pickle.EXT2, pickle.EXT4,
                    pickle.NEXT_BUFFER, pickle.READONLY_BUFFER, pickle.PERSID):
        dispatch[_opcode[0]] = refuse_opcode
    del _opcode


def _damaged(file: str, what: str) -> CheckpointError:
    return CheckpointError(f"load: {file!r} is a damaged PyTorch checkpoint: {what}")


class _Placing(Exception):
    """Carries an error of ``map_location`` out of the unpickler, which calls damaged files' errors its own."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _check_no_hooks(backward_hooks: Any, file: str) -> None:
    if backward_hooks is not None and not (isinstance(backward_hooks, dict) and not backward_hooks):
        raise CheckpointError(f"load: {file!r} holds a tensor with backward hooks (code), which tinynorm refuses")


def _device(kind: Any, index: Any = None) -> str:
    """``torch.device`` in a pickle, as a device string."""
    if not isinstance(kind, str) or not (index is None or _is_count(index)):
        raise CheckpointError(f"load: a torch.device({kind!r:.40}, {index!r:.40}) is not a device")
    return kind if index is None else f"{kind}:{index}"


def _latin1_bytes(text: Any, encoding: Any = "latin1") -> bytes:
    """How protocol-2 pickles store ``bytes``: ``_codecs.encode(text, 'latin1')``; nothing else."""
    if not isinstance(text, str) or encoding != "latin1":
        raise CheckpointError("load: _codecs.encode is only accepted for bytes stored as latin1 text")
    return text.encode("latin1")
