"""Tests for tinynorm.io: exact round trips of nested state, and clear errors for anything else."""
import json
import math
import os
import pickle
import subprocess
import sys
import tracemalloc
import zipfile
from collections import OrderedDict
from io import BytesIO

import numpy as np
import pytest
from helpers import RunsCodeWhenUnpickled
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinynorm as tn
from tinynorm import io
from tinynorm.optim import Adam


def assert_identical(got, want, where="obj"):
    """Same types all the way down, same dict key order, arrays equal bit for bit."""
    assert type(got) is type(want), f"{where}: {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, dict):
        assert list(got) == list(want), where
        assert [type(k) for k in got] == [type(k) for k in want], where
        for key in want:
            assert_identical(got[key], want[key], f"{where}[{key!r}]")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want)):
            assert_identical(a, b, f"{where}[{i}]")
    elif isinstance(want, (tn.Tensor, np.ndarray, np.generic)):
        got_array, want_array = np.asarray(got), np.asarray(want)
        assert got_array.dtype == want_array.dtype and got_array.shape == want_array.shape, where
        assert got_array.tobytes() == want_array.tobytes(), where
        if isinstance(want, tn.Tensor):
            assert not got.requires_grad and got.device == "cpu", where
    elif isinstance(want, float) and math.isnan(want):
        assert math.isnan(got), where
    else:
        assert got == want and repr(got) == repr(want), where  # repr tells -0.0 from 0.0


def round_trip(obj, tmp_path):
    path = tmp_path / "checkpoint.npz"
    io.save(obj, path)
    return io.load(path)


def test_nested_structure_round_trips_exactly(tmp_path):
    rng = np.random.default_rng(0)
    obj = {
        "tensors": [tn.randn(3, 4), tn.tensor(rng.standard_normal(5)), tn.zeros(0, 3), tn.tensor(7),
                    tn.tensor([1, 2, 3]), tn.tensor([True, False]), tn.randn(2, dtype=tn.float16)],
        "arrays": (np.arange(6, dtype=np.int32).reshape(2, 3), np.asfortranarray(rng.standard_normal((3, 2))),
                   rng.standard_normal((4, 6))[::2, 1::3], np.array(2.5), np.array([1, 2], dtype=np.uint8)),
        "scalars": [np.float32(1.25), np.int64(-3), np.bool_(True), np.float64(0.1)],
        "numbers": [0, 1, True, False, 1.0, -0.0, 0.1, 1e300, float("inf"), float("-inf"), float("nan"), 2**70],
        "text": ["", "ascii", "ünïcødé ✓", '{"json": "inside"}'],
        "nothing": None,
        "order": {"z": 1, "a": 2, "m": 3},
        3: "an int key",
        "3": "a str key",
        "empty": [{}, [], ()],
        "ordered": OrderedDict([("b", 1), ("a", (2, [3]))]),
    }
    assert_identical(round_trip(obj, tmp_path), obj)


def test_parameters_come_back_as_plain_tensors_without_grad(tmp_path):
    w = tn.randn(2, 3, requires_grad=True)
    (w * w).sum().backward()
    loaded = round_trip({"w": w}, tmp_path)["w"]
    assert type(loaded) is tn.Tensor and not loaded.requires_grad and loaded.grad is None
    assert loaded.numpy().tobytes() == w.numpy().tobytes()
    assert loaded.array is not w.array


def test_an_object_appearing_twice_is_stored_once(tmp_path):
    shared = tn.randn(4)
    array = np.ones(3)
    loaded = round_trip({"a": shared, "b": [shared], "c": array, "d": array, "e": tn.randn(4)}, tmp_path)
    assert loaded["a"] is loaded["b"][0] and loaded["c"] is loaded["d"]
    assert loaded["e"] is not loaded["a"]
    with zipfile.ZipFile(tmp_path / "checkpoint.npz") as archive:
        assert len(archive.namelist()) == 4  # three arrays and the structure


def test_optimizer_state_dict_round_trip(tmp_path):
    params = [tn.randn(3, requires_grad=True), tn.randn(2, 2, requires_grad=True)]
    optimizer = Adam([{"params": params[:1]}, {"params": params[1:], "lr": 0.1}], amsgrad=True)
    for p in params:
        p.grad = tn.ones_like(p)
    optimizer.step()
    state = optimizer.state_dict()
    loaded = round_trip(state, tmp_path)
    assert_identical(loaded, state)
    assert list(loaded["state"]) == [0, 1]  # int keys stay ints
    assert loaded["param_groups"][0]["betas"] == (0.9, 0.999)  # tuples stay tuples


keys = st.one_of(st.text(max_size=5), st.integers(-2**40, 2**40))
leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False), st.text(max_size=8),
    hnp.arrays(st.sampled_from([np.float32, np.float64, np.int64, np.int8, np.bool_]),
               hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)),
)
trees = st.recursive(
    leaves,
    lambda children: st.one_of(st.lists(children, max_size=4), st.lists(children, max_size=3).map(tuple),
                               st.dictionaries(keys, children, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=40, deadline=None)
@given(tree=trees)
def test_random_trees_round_trip_exactly(tree, tmp_path_factory):
    assert_identical(round_trip(tree, tmp_path_factory.mktemp("io")), tree)


def test_save_writes_exactly_the_given_path(tmp_path):
    path = tmp_path / "model.ckpt"
    io.save({"x": 1}, str(path))
    assert os.listdir(tmp_path) == ["model.ckpt"]  # no ".npz" appended, no temporary file left
    assert io.load(path) == {"x": 1}
    io.save({"x": 2}, path)  # overwrites
    assert io.load(path) == {"x": 2}


@pytest.mark.parametrize("obj, where, type_name", [
    ({"a": [1, {2, 3}]}, r"obj\['a'\]\[1\]", "set"),
    ({"model": {"fc": object()}}, r"obj\['model'\]\['fc'\]", "object"),
    ([1, 2.0, 3j], r"obj\[2\]", "complex"),
    ({"f": len}, r"obj\['f'\]", "builtin_function_or_method"),
    ({"a": np.array([None, 1], dtype=object)}, r"obj\['a'\]", "array of Python objects"),
])
def test_unsupported_objects_raise_type_error_naming_the_key(obj, where, type_name, tmp_path):
    with pytest.raises(TypeError, match=f"{where}.*{type_name}"):
        io.save(obj, tmp_path / "bad.npz")
    assert os.listdir(tmp_path) == []


def test_unsupported_dict_keys_raise_type_error(tmp_path):
    with pytest.raises(TypeError, match=r"obj\['outer'\] has a key \(1, 2\) of type tuple"):
        io.save({"outer": {(1, 2): 0}}, tmp_path / "bad.npz")
    with pytest.raises(TypeError, match="key 1.5 of type float"):
        io.save({1.5: 0}, tmp_path / "bad.npz")


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.npz"):
        io.load(tmp_path / "nowhere.npz")


def test_a_pickle_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.npz"
    path.write_bytes(pickle.dumps(RunsCodeWhenUnpickled(str(marker))))
    with pytest.raises(ValueError, match="evil.npz.*not a tinynorm checkpoint"):
        io.load(path)
    assert not marker.exists()


def test_a_pickled_array_inside_a_checkpoint_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.npz"
    header = json.dumps({"format": io.FORMAT, "version": io.VERSION, "tree": {"ndarray": "0"}})
    payload = np.array([RunsCodeWhenUnpickled(str(marker))], dtype=object)
    np.savez(path, **{"0": payload, io.STRUCTURE_KEY: np.frombuffer(header.encode(), np.uint8)})
    with pytest.raises(ValueError, match="evil.npz.*damaged"):
        io.load(path)
    assert not marker.exists()


def test_foreign_files_raise_value_error_naming_the_path(tmp_path):
    np.savez(tmp_path / "foreign.npz", weights=np.ones(3))
    np.save(tmp_path / "single.npy", np.ones(3))
    (tmp_path / "random.bin").write_bytes(np.random.default_rng(0).bytes(1000))
    (tmp_path / "empty.npz").write_bytes(b"")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as archive:
        archive.writestr("readme.txt", "hello")
    cases = {"foreign.npz": "no '__tinynorm__' entry", "single.npy": "single numpy array",
             "random.bin": "not a tinynorm checkpoint", "empty.npz": "not a tinynorm checkpoint",
             "other.zip": "no '__tinynorm__' entry"}
    for name, message in cases.items():
        with pytest.raises(ValueError, match=f"{name}.*{message}"):
            io.load(tmp_path / name)


def test_damaged_checkpoints_raise_value_error(tmp_path):
    path = tmp_path / "good.npz"
    io.save({"w": tn.randn(100), "step": 3}, path)
    data = path.read_bytes()
    (tmp_path / "truncated.npz").write_bytes(data[: len(data) // 2])
    flipped = bytearray(data)
    flipped[300] ^= 0xFF  # inside the first array's bytes: the zip CRC check catches it
    (tmp_path / "flipped.npz").write_bytes(bytes(flipped))
    for name in ("truncated.npz", "flipped.npz"):
        with pytest.raises(ValueError, match=name):
            io.load(tmp_path / name)


@pytest.mark.parametrize("header, message", [
    (b"not json", "damaged"),
    (json.dumps({"format": "something else", "tree": 1}).encode(), "not a tinynorm checkpoint header"),
    (json.dumps({"format": io.FORMAT, "version": 99, "tree": 1}).encode(), "version 99"),
    (json.dumps({"format": io.FORMAT, "version": io.VERSION, "tree": {"tensor": "7"}}).encode(),
     "structure at obj"),
    (json.dumps({"format": io.FORMAT, "version": io.VERSION, "tree": {"dict": [["a", {"list": 3}]]}}).encode(),
     r"structure at obj\['a'\]"),
])
def test_bad_structure_raises_value_error(header, message, tmp_path):
    path = tmp_path / "bad.npz"
    np.savez(path, **{"0": np.ones(2), io.STRUCTURE_KEY: np.frombuffer(header, np.uint8)})
    with pytest.raises(ValueError, match=f"bad.npz.*{message}"):
        io.load(path)


# ------------------------------------------------------------------- saving never loses data
def old_checkpoint(tmp_path):
    path = tmp_path / "model.npz"
    io.save({"w": tn.ones(1000), "step": 1}, path)
    return path, path.read_bytes()


def assert_unchanged(tmp_path, path, contents, extra=()):
    assert sorted(os.listdir(tmp_path)) == sorted(["model.npz", *extra])  # no temporary file left behind
    assert path.read_bytes() == contents
    assert io.load(path)["step"] == 1


def test_save_never_touches_an_unrelated_file_with_the_old_temporary_name(tmp_path):
    path, _ = old_checkpoint(tmp_path)
    bystander = tmp_path / "model.npz.tmp"
    bystander.write_bytes(b"someone else's data")
    io.save({"step": 2}, path)
    assert bystander.read_bytes() == b"someone else's data"
    assert io.load(path) == {"step": 2}
    assert sorted(os.listdir(tmp_path)) == ["model.npz", "model.npz.tmp"]


def test_saving_through_a_symlink_writes_its_target_and_keeps_the_link(tmp_path):
    target = tmp_path / "real" / "weights.npz"
    target.parent.mkdir()
    io.save({"step": 1}, target)
    link = tmp_path / "latest.npz"
    link.symlink_to(target)
    io.save({"step": 2}, link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert io.load(target) == {"step": 2} and sorted(os.listdir(target.parent)) == ["weights.npz"]
    dangling = tmp_path / "next.npz"
    dangling.symlink_to(tmp_path / "real" / "new.npz")
    io.save({"step": 3}, dangling)  # writing through a dangling link creates its target, as open() does
    assert dangling.is_symlink() and io.load(tmp_path / "real" / "new.npz") == {"step": 3}


def test_save_keeps_an_existing_files_permissions_and_gives_a_new_one_the_umasks(tmp_path):
    path, _ = old_checkpoint(tmp_path)
    os.chmod(path, 0o640)
    io.save({"step": 2}, path)
    assert os.stat(path).st_mode & 0o777 == 0o640
    umask = os.umask(0o027)
    try:
        io.save({"step": 1}, tmp_path / "new.npz")
    finally:
        os.umask(umask)
    assert os.stat(tmp_path / "new.npz").st_mode & 0o777 == 0o640


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs POSIX permissions that bind (not root)")
def test_a_read_only_directory_keeps_the_old_checkpoint(tmp_path):
    path, contents = old_checkpoint(tmp_path)
    os.chmod(tmp_path, 0o555)
    try:
        with pytest.raises(PermissionError):
            io.save({"step": 2}, path)
    finally:
        os.chmod(tmp_path, 0o755)
    assert_unchanged(tmp_path, path, contents)


def test_failing_to_create_or_rename_the_temporary_keeps_the_old_checkpoint(tmp_path, monkeypatch):
    """What a read-only directory does, also where permissions do not bind (as root)."""
    path, contents = old_checkpoint(tmp_path)
    for name in ("open", "replace"):
        def refuse(*args, **kwargs):
            raise PermissionError(13, "Permission denied")
        with monkeypatch.context() as patch:
            patch.setattr(io.os, name, refuse)
            with pytest.raises(PermissionError):
                io.save({"step": 2}, path)
        assert_unchanged(tmp_path, path, contents)


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_full_disk_or_ctrl_c_while_writing_keeps_the_old_checkpoint(failure, tmp_path, monkeypatch):
    path, contents = old_checkpoint(tmp_path)
    real_savez = np.savez

    def write_half_then_fail(file, **arrays):
        real_savez(file, **arrays)
        file.truncate(file.tell() // 2)
        raise failure

    monkeypatch.setattr(io.np, "savez", write_half_then_fail)
    with pytest.raises(type(failure)):
        io.save({"w": tn.zeros(1000), "step": 2}, path)
    assert_unchanged(tmp_path, path, contents)


@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE is POSIX")
def test_a_file_size_limit_keeps_the_old_checkpoint(tmp_path):
    path, contents = old_checkpoint(tmp_path)
    script = (
        "import resource, signal, sys, tinynorm as tn\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))\n"
        "try:\n"
        f"    tn.save({{'w': tn.zeros(100000), 'step': 2}}, {str(path)!r})\n"
        "except OSError as error:\n"
        "    sys.exit(3 if error.errno == 27 else 4)\n"  # EFBIG
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 3, result.stderr[-2000:]
    assert_unchanged(tmp_path, path, contents)


def test_a_failed_save_of_an_unsupported_object_writes_nothing(tmp_path):
    path, contents = old_checkpoint(tmp_path)
    with pytest.raises(TypeError):
        io.save({"step": 2, "bad": object()}, path)
    assert_unchanged(tmp_path, path, contents)


def test_self_referencing_and_very_deep_structures_are_a_clear_error(tmp_path):
    cyclic = {"a": [1, 2]}
    cyclic["a"].append(cyclic)
    deep = []
    for _ in range(5000):
        deep = [deep]
    for obj, message in ((cyclic, r"obj\['a'\]\[2\] contains itself"), (deep, f"more than {io.MAX_DEPTH} deep")):
        with pytest.raises(ValueError, match=message):
            io.save(obj, tmp_path / "x.npz")
    assert os.listdir(tmp_path) == []
    shared = [1]
    io.save({"a": shared, "b": shared, "nested": [[[[shared]]]]}, tmp_path / "ok.npz")  # shared, not cyclic: fine


def test_save_and_load_file_objects():
    buffer = BytesIO()
    io.save({"w": tn.arange(3), "name": "x"}, buffer)
    buffer.seek(0)
    loaded = io.load(buffer)
    assert loaded["name"] == "x" and loaded["w"].numpy().tolist() == [0, 1, 2]


class Unseekable:
    def __init__(self, data):
        self.stream = BytesIO(data)

    def read(self, n=-1):
        return self.stream.read(n)


def test_load_reads_an_unseekable_stream(tmp_path):
    path, _ = old_checkpoint(tmp_path)
    assert io.load(Unseekable(path.read_bytes()))["step"] == 1


# ------------------------------------------------------------------- load's PyTorch options
def test_load_accepts_pytorchs_arguments_and_refuses_unpickling(tmp_path):
    path, _ = old_checkpoint(tmp_path)
    assert io.load(path, map_location="cpu", weights_only=True)["step"] == 1
    assert io.load(path, weights_only=None)["step"] == 1  # PyTorch's "default", which is True
    with pytest.raises(ValueError, match="weights_only=False would unpickle arbitrary objects"):
        io.load(path, weights_only=False)
    with pytest.raises(ValueError, match="pickle_module is not supported"):
        io.load(path, pickle_module=pickle)
    with pytest.raises(ValueError, match="mmap=True is not supported"):
        io.load(path, mmap=True)
    with pytest.raises(ValueError, match="device must be one of"):
        io.load(path, map_location="tpu")


def test_map_location_forms(tmp_path):
    path = tmp_path / "m.npz"
    io.save({"w": tn.ones(2)}, path)
    seen = []

    def keep_on_cpu(tensor, location):
        seen.append(location)
        return tensor

    for map_location in ("cpu", {"cpu": "cpu"}, {"cuda:1": "cpu"}, keep_on_cpu, lambda storage, location: None):
        assert io.load(path, map_location=map_location)["w"].device == "cpu"
    assert seen == ["cpu"]
    with pytest.raises(TypeError, match="map_location returned a str"):
        io.load(path, map_location=lambda tensor, location: "cpu")


# ----------------------------------------------------------------- hostile checkpoints
def npy_member(shape, dtype, data):
    """The bytes of a .npy file declaring ``shape`` and ``dtype`` but holding ``data``."""
    header = BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": shape})
    return header.getvalue() + data


def write_checkpoint(path, tree, members, compression=zipfile.ZIP_STORED):
    header = json.dumps({"format": io.FORMAT, "version": io.VERSION, "tree": tree}).encode()
    with zipfile.ZipFile(path, "w", compression) as archive:
        archive.writestr(io.STRUCTURE_KEY + ".npy", npy_member((len(header),), np.uint8, header))
        for name, data in members.items():
            archive.writestr(name + ".npy", data)


def test_a_small_member_declaring_a_huge_array_is_refused_before_allocating(tmp_path):
    path = tmp_path / "huge.npz"
    write_checkpoint(path, {"tensor": "0"}, {"0": npy_member((2**40,), np.float64, b"\0" * 600)})
    assert path.stat().st_size < 2000
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"member '0.npy' declares a float64 array of shape \(1099511627776,\)"):
            io.load(path)
        assert tracemalloc.get_traced_memory()[1] < 10 * 2**20
    finally:
        tracemalloc.stop()


def test_a_compressed_member_claiming_more_than_deflate_can_expand_is_refused(tmp_path):
    path = tmp_path / "bomb.npz"
    write_checkpoint(path, {"tensor": "0"}, {"0": npy_member((2**22,), np.float64, b"\0" * 8 * 2**22)},
                     compression=zipfile.ZIP_DEFLATED)
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("0.npy")
    data = bytearray(path.read_bytes())
    end = data.rindex(b"PK\x05\x06")  # the end record gives where the central directory starts
    entry = data.index(b"0.npy", int.from_bytes(data[end + 16:end + 20], "little")) - 46  # 46: its fixed fields
    assert int.from_bytes(data[entry + 24:entry + 28], "little") == info.file_size  # the declared size
    data[entry + 24:entry + 28] = (info.compress_size * 2000).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="member '0.npy' declares .* bytes but holds only"):
        io.load(path)


def test_a_member_that_is_not_npy_is_named_in_one_line(tmp_path):
    path = tmp_path / "magic.npz"
    write_checkpoint(path, {"tensor": "0"}, {"0": b"PK\x03\x04 not an array at all"})
    with pytest.raises(ValueError) as error:
        io.load(path)
    message = str(error.value)
    assert "\n" not in message and "magic.npz" in message and "member '0.npy' is not a .npy array" in message


@pytest.mark.parametrize("depth", [io.MAX_DEPTH + 5, 3000, 100000])
def test_a_deeply_nested_header_is_refused_cleanly(depth, tmp_path):
    path = tmp_path / "deep.npz"
    write_checkpoint(path, None, {})
    nested = '{"list": [' * depth + "1" + "]}" * depth
    header = ('{"format": "%s", "version": %d, "tree": %s}' % (io.FORMAT, io.VERSION, nested)).encode()
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(io.STRUCTURE_KEY + ".npy", npy_member((len(header),), np.uint8, header))
    with pytest.raises(ValueError, match=f"nests more than {io.MAX_DEPTH} deep"):
        io.load(path)


def test_an_oversized_npy_header_is_refused(tmp_path):
    path = tmp_path / "header.npz"
    big_header = b"\x93NUMPY\x02\x00" + (200000).to_bytes(4, "little") + b"{" + b" " * 199999
    write_checkpoint(path, {"tensor": "0"}, {"0": big_header})
    with pytest.raises(ValueError, match="header.npz"):
        io.load(path)
