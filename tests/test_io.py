"""Tests for tinynorm.io: exact round trips of nested state, and clear errors for anything else."""
import json
import math
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
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


class RunsCodeWhenUnpickled:
    """Unpickling this creates a file: proof of code execution, if it ever happens."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


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
