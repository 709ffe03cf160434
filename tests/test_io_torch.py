"""Reading PyTorch's zip checkpoints without PyTorch and without ever running code from the file.

Hand-made archives (built here, so these tests need no PyTorch) check the format and every way a pickle
could reach code: planted globals, ``__reduce__`` payloads, subclasses, the opcodes that build arbitrary
objects, and views reaching outside their storage. Files written by ``torch.save`` check values, dtypes,
shapes, strides and shared storages against PyTorch itself, where it is installed.
"""
import os
import pickle
import subprocess
import sys
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
from helpers import RunsCodeWhenUnpickled

import tinynorm as tn
from tinynorm import io, nn

# ------------------------------------------------------------------ a hand-made pickle writer
PROTO, STOP, MARK, TUPLE, REDUCE, BINPERSID = b"\x80\x02", b".", b"(", b"t", b"R", b"Q"
EMPTY_DICT, SETITEMS, NEWFALSE, BUILD = b"}", b"u", b"\x89", b"b"


def op_global(module, name):
    return b"c" + f"{module}\n{name}\n".encode()


def op_str(text):
    data = text.encode()
    return b"X" + len(data).to_bytes(4, "little") + data


def op_int(value):
    return b"J" + value.to_bytes(4, "little", signed=True)


def op_tuple(*items):
    return MARK + b"".join(items) + TUPLE


def op_dict(items):
    return EMPTY_DICT + MARK + b"".join(op_str(key) + value for key, value in items) + SETITEMS


def op_tensor(key, storage="FloatStorage", numel=6, offset=0, size=(6,), stride=(1,), location="cpu"):
    """A tensor as torch.save pickles it: ``_rebuild_tensor_v2(storage, offset, size, stride, False, {})``."""
    storage_id = op_tuple(op_str("storage"), op_global("torch", storage), op_str(key), op_str(location),
                          op_int(numel)) + BINPERSID
    hooks = op_global("collections", "OrderedDict") + b")" + REDUCE
    arguments = op_tuple(storage_id, op_int(offset), op_tuple(*map(op_int, size)), op_tuple(*map(op_int, stride)),
                         NEWFALSE, hooks)
    return op_global("torch._utils", "_rebuild_tensor_v2") + arguments + REDUCE


def write_torch_zip(path, body, records=None, byteorder="little", extra=()):
    """A PyTorch-format archive: ``archive/data.pkl`` holding ``body`` and ``archive/data/<key>`` records."""
    records = {"0": np.arange(6, dtype=np.float32).tobytes()} if records is None else records
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", PROTO + body + STOP)
        archive.writestr("archive/byteorder", byteorder)
        for key, data in records.items():
            archive.writestr(f"archive/data/{key}", data)
        archive.writestr("archive/version", "3\n")
        for name in extra:
            archive.writestr(name, b"")
    return path


def test_a_hand_made_state_dict_loads_with_its_views(tmp_path):
    body = op_global("collections", "OrderedDict") + b")" + REDUCE + MARK + op_str("w") + op_tensor(
        "0", offset=1, size=(2, 2), stride=(1, 2)) + op_str("flat") + op_tensor("0") + SETITEMS
    loaded = io.load(write_torch_zip(tmp_path / "m.pt", body))
    assert type(loaded) is OrderedDict and list(loaded) == ["w", "flat"]
    storage = np.arange(6, dtype=np.float32)
    expected = np.lib.stride_tricks.as_strided(storage[1:], (2, 2), (4, 8))
    np.testing.assert_array_equal(loaded["w"].numpy(), expected)
    assert np.shares_memory(loaded["w"].numpy(), loaded["flat"].numpy())  # one storage, as in the file
    assert not loaded["w"].requires_grad


def test_big_endian_files_load_the_same_values(tmp_path):
    records = {"0": np.arange(6, dtype=">f4").tobytes()}
    loaded = io.load(write_torch_zip(tmp_path / "big.pt", op_tensor("0"), records, byteorder="big"))
    assert loaded.dtype == np.float32 and loaded.numpy().tolist() == list(range(6))


class EvilDict(OrderedDict):
    """A subclass of an allowed type whose ``__setstate__`` runs code."""

    def __setstate__(self, state):
        open(state["marker"], "w").close()


def payloads(marker):
    command = op_str(f"touch {marker}")
    return {
        "os.system": op_global("os", "system") + op_tuple(command) + REDUCE,
        "posix.system": op_global("posix", "system") + op_tuple(command) + REDUCE,
        "builtins.eval": op_global("builtins", "eval") + op_tuple(op_str(f"open({str(marker)!r}, 'w')")) + REDUCE,
        "builtins.getattr": op_global("builtins", "getattr") + op_tuple(op_global("collections", "OrderedDict"),
                                                                        op_str("__init__")) + REDUCE,
        "__reduce__ payload": pickle.dumps(RunsCodeWhenUnpickled(str(marker)), protocol=2)[2:-1],
        "subclass": pickle.dumps(EvilDict(), protocol=2)[2:-1] + op_dict([("marker", op_str(str(marker)))]) + BUILD,
        "dotted name": op_str("collections") + op_str("OrderedDict.fromkeys") + b"\x93" + op_tuple() + REDUCE,
        "lookalike module": op_global("torch._utils.os", "system") + op_tuple(command) + REDUCE,
        "INST": MARK + command + b"ios\nsystem\n",
        "OBJ": MARK + op_global("os", "system") + command + b"o",
        "NEWOBJ": op_global("collections", "OrderedDict") + op_tuple() + b"\x81",
        "EXT1": b"\x82\x01",
        "call a dtype": op_global("torch", "float32") + op_tuple() + REDUCE,
        "BUILD on a tensor": op_tensor("0") + op_dict([("array", op_str("x"))]) + BUILD,
        "backward hooks": op_global("torch._utils", "_rebuild_tensor_v2") + op_tuple(
            op_tuple(op_str("storage"), op_global("torch", "FloatStorage"), op_str("0"), op_str("cpu"), op_int(6))
            + BINPERSID, op_int(0), op_tuple(op_int(6)), op_tuple(op_int(1)), NEWFALSE,
            op_dict([("hook", op_global("os", "system"))])) + REDUCE,
    }


@pytest.mark.parametrize("name", sorted(payloads("m")))
def test_planted_payloads_are_refused_without_running(name, tmp_path):
    marker = tmp_path / "pwned"
    path = write_torch_zip(tmp_path / "evil.pt", payloads(marker)[name])
    with pytest.raises(ValueError) as error:
        io.load(path)
    assert not marker.exists()
    message = str(error.value)
    assert "evil.pt" in message and "\n" not in message and "refuses" in message


@pytest.mark.parametrize("body, records, message", [
    (op_tensor("0", size=(10,)), None, r"size \(10,\) and stride \(1,\) at offset 0 reaches past its storage of 6"),
    (op_tensor("0", offset=7, size=(0,)), None, "reaches past its storage"),
    (op_tensor("0", offset=-1), None, "a tensor with offset -1"),
    (op_tensor("0", size=(2, 3), stride=(3, -1)), None, "stride"),
    (op_tensor("0", numel=2**30), None, r"holds 24 bytes, 4294967296 expected"),
    (op_tensor("7"), None, "no record 'archive/data/7'"),
    (op_tensor("0", storage="BFloat16Storage", numel=12), None, "dtype torch.bfloat16, which tinynorm does not have"),
    (op_tensor("0", storage="ComplexFloatStorage", numel=3), None, "dtype torch.complex64"),
    (op_tensor("0", location="tpu:0"), None, "saved on 'tpu:0'"),
    (op_tuple(op_str("storage"), op_int(3)) + BINPERSID, None, "unknown persistent id"),
    (b"\x80\x05", None, "damaged PyTorch checkpoint"),
    (op_str("truncated")[:-3], None, "damaged PyTorch checkpoint"),
])
def test_damaged_or_hostile_structure_is_a_clear_error(body, records, message, tmp_path):
    path = write_torch_zip(tmp_path / "bad.pt", body, records)
    with pytest.raises(ValueError, match=message) as error:
        io.load(path)
    assert "bad.pt" in str(error.value)


def test_legacy_and_torchscript_files_are_refused_with_the_way_to_convert(tmp_path):
    legacy = tmp_path / "legacy.pt"
    legacy.write_bytes(b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.\x80\x02M\xe9\x03.")
    with pytest.raises(ValueError, match="legacy format.*torch.save\\(torch.load\\(path\\), new_path\\)"):
        io.load(legacy)
    script = write_torch_zip(tmp_path / "script.pt", op_tensor("0"), extra=["archive/constants.pkl"])
    with pytest.raises(ValueError, match="TorchScript archive"):
        io.load(script)


def test_tensors_saved_on_cuda_follow_map_location(tmp_path):
    path = write_torch_zip(tmp_path / "gpu.pt", op_tensor("0", location="cuda:0"))
    for map_location in ("cpu", {"cuda:0": "cpu"}, lambda storage, location: storage):
        assert io.load(path, map_location=map_location).device == "cpu"
    if not tn.cuda.is_available():
        with pytest.raises(RuntimeError, match="saved on 'cuda:0'.*map_location='cpu'"):
            io.load(path)


def test_loading_a_pytorch_file_never_imports_torch(tmp_path):
    path = write_torch_zip(tmp_path / "m.pt", op_tensor("0"))
    code = f"import sys, tinynorm; tinynorm.load({str(path)!r}); print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "False"


# ------------------------------------------------------------------ files from torch.save
def torch_objects(torch):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3), torch.nn.Flatten(),
                                torch.nn.Linear(3 * 4 * 4, 2))
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(4, 2, 6, 6)).sum().backward()
    optimizer.step()
    base = torch.arange(24.0).reshape(4, 6)
    return {
        "model": model.state_dict(), "optimizer": optimizer.state_dict(),
        "transposed": base.t(), "window": base[1:3, 2:5], "column": base[:, 4], "base": base,
        "expanded": torch.ones(3, 1).expand(3, 4), "scalar": torch.tensor(2.5), "empty": torch.zeros(0, 3),
        "parameter": torch.nn.Parameter(torch.ones(2)),
        "dtypes": [torch.ones(2, dtype=dtype) for dtype in (torch.float16, torch.float64, torch.int8, torch.int16,
                                                             torch.int32, torch.int64, torch.uint8, torch.bool)],
        "size": base.shape, "device": torch.device("cpu"), "bytes": b"\x00\xff", "plain": (1, 2.5, "x", None, True),
    }


def assert_like_torch(ours, theirs, torch, where="obj"):
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tn.Tensor), where
        assert ours.dtype == np.dtype(str(theirs.dtype).replace("torch.", "")), where
        assert ours.shape == tuple(theirs.shape), where
        assert tuple(s // ours.dtype.itemsize for s in ours.numpy().strides) == theirs.stride(), where
        np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy(), err_msg=where)
        assert ours.requires_grad == theirs.requires_grad, where
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs), where
        for key in theirs:
            assert_like_torch(ours[key], theirs[key], torch, f"{where}[{key!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_like_torch(a, b, torch, f"{where}[{i}]")
    elif isinstance(theirs, torch.device):
        assert ours == str(theirs), where
    else:
        assert ours == theirs and type(ours) is type(theirs), where


def test_torch_save_files_load_with_pytorchs_values_dtypes_shapes_and_strides(tmp_path):
    torch = pytest.importorskip("torch")
    objects = torch_objects(torch)
    torch.save(objects, tmp_path / "all.pt")
    loaded = tn.load(tmp_path / "all.pt")
    assert_like_torch(loaded, objects, torch)
    assert isinstance(loaded["parameter"], nn.Parameter)
    for view in ("transposed", "window", "column"):  # views of one storage share memory, as in PyTorch
        assert np.shares_memory(loaded[view].numpy(), loaded["base"].numpy()), view
    assert loaded["window"][0, 0].item() == objects["window"][0, 0].item() == 8.0  # its storage offset


def test_a_torch_state_dict_loads_into_a_tinynorm_model_with_the_same_outputs(tmp_path):
    torch = pytest.importorskip("torch")
    theirs = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(), torch.nn.Linear(4, 3))
    theirs.train()
    theirs(torch.randn(16, 5))
    theirs.eval()
    torch.save(theirs.state_dict(), tmp_path / "model.pth")
    ours = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 3))
    ours.load_state_dict(tn.load(tmp_path / "model.pth", map_location="cpu", weights_only=True))
    ours.eval()
    x = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32)
    np.testing.assert_allclose(ours(tn.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_a_pickled_torch_model_and_the_legacy_format_are_refused(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save(torch.nn.Linear(2, 2), tmp_path / "whole.pt")
    with pytest.raises(ValueError, match=r"needs torch\.nn\.modules\.linear\.Linear.*state_dict\(\)"):
        tn.load(tmp_path / "whole.pt")
    torch.save({"w": torch.ones(2)}, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(ValueError, match="legacy format"):
        tn.load(tmp_path / "legacy.pt")


def test_tinynorm_checkpoints_written_to_a_pt_name_still_load(tmp_path):
    tn.save({"w": tn.ones(2)}, tmp_path / "model.pt")
    assert tn.load(tmp_path / "model.pt")["w"].numpy().tolist() == [1.0, 1.0]
    assert os.listdir(tmp_path) == ["model.pt"]
