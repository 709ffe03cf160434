"""Module.load_state_dict is all or nothing: every value is converted and checked before any is written,
so a failed load, strict or not, leaves every parameter and buffer bit for bit as it was."""
import numpy as np
import pytest

import tinynorm as tn
from tinynorm import nn


def model():
    tn.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    net.train()
    net(tn.randn(8, 3))  # running statistics and num_batches_tracked move away from their defaults
    return net


def snapshot(net):
    return {name: (value.dtype, value.numpy().tobytes()) for name, value in net.state_dict().items()}


def valid_state(net):
    """A complete, loadable state: every value changed, so a partial load would show."""
    return {name: (value.numpy() + 1).astype(value.dtype) for name, value in net.state_dict().items()}


BAD_VALUES = {  # key -> value: each is refused, naming the key
    "1.num_batches_tracked": ["abc", None, float("nan"), float("inf"), 1.5, 2**63, 2**64, -2**63 - 1,
                              np.uint64(2**63), 2.0**63, np.array([1, 2]), tn.tensor(2.5), [1], {"a": 1}, object()],
    "1.running_mean": [np.zeros(5, np.float32), np.zeros(4, np.int64), "abcd", [[0.0] * 4], np.zeros(4, complex),
                       np.array([None] * 4), [1, [2, 3], 4, 5]],
    "2.weight": [np.zeros((4, 2), np.float32), None, tn.zeros(2, 4, dtype=tn.int32)],
}


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("key, value", [(key, value) for key, values in BAD_VALUES.items() for value in values],
                         ids=lambda item: repr(item)[:30])
def test_a_failed_load_changes_nothing(key, value, strict):
    net = model()
    before = snapshot(net)
    state = valid_state(net)  # everything but the bad key is loadable
    state[key] = value
    with pytest.raises(RuntimeError, match=f"{key}: "):
        net.load_state_dict(state, strict=strict)
    assert snapshot(net) == before


def test_every_bad_key_is_named_in_one_error():
    net = model()
    state = valid_state(net)
    state["0.bias"], state["1.num_batches_tracked"] = np.zeros(7, np.float32), 0.5
    with pytest.raises(RuntimeError) as error:
        net.load_state_dict(state)
    assert "0.bias: size mismatch: copying a param with shape (7,) from checkpoint, the shape in current model is (4,)" in str(error.value)
    assert "1.num_batches_tracked: the value 0.5" in str(error.value)


def test_missing_or_unexpected_keys_change_nothing_when_strict():
    net = model()
    before = snapshot(net)
    for change in ({"drop": "2.bias"}, {"add": "3.weight"}):
        state = valid_state(net)
        if "drop" in change:
            del state[change["drop"]]
        else:
            state[change["add"]] = np.zeros(1)
        with pytest.raises(RuntimeError, match="missing keys|unexpected keys"):
            net.load_state_dict(state)
        assert snapshot(net) == before


@pytest.mark.parametrize("value, expected", [
    (5, 5), (np.int32(7), 7), (tn.tensor(9), 9), (3.0, 3), (np.float32(12.0), 12), (True, 1), (2**62, 2**62),
    (tn.tensor(4.0, dtype=tn.float64), 4), (np.array(-2), -2),
])
def test_integer_counters_take_values_they_hold_exactly(value, expected):
    net = model()
    state = valid_state(net)
    state["1.num_batches_tracked"] = value
    net.load_state_dict(state)
    assert net[1].num_batches_tracked.dtype == np.int64 and net[1].num_batches_tracked.item() == expected
    np.testing.assert_array_equal(net[0].weight.numpy(), state["0.weight"])  # and the rest loaded too


def test_non_mappings_are_a_type_error():
    net = model()
    for value in (None, [("0.weight", np.zeros((4, 3)))], "state"):
        with pytest.raises(TypeError, match="expected state_dict to be a dict-like mapping.*got"):
            net.load_state_dict(value)


def test_a_read_only_model_tensor_is_refused_before_anything_is_written():
    layer = nn.Linear(2, 2)
    frozen = np.zeros(2, np.float32)
    frozen.flags.writeable = False
    with pytest.warns(UserWarning, match="read-only"):
        layer.bias = nn.Parameter(tn.from_numpy(frozen))
    before = snapshot(layer)
    with pytest.raises(RuntimeError, match="bias: the model's tensor is read-only"):
        layer.load_state_dict({"weight": np.ones((2, 2), np.float32), "bias": np.ones(2, np.float32)})
    assert snapshot(layer) == before


def test_nan_and_overflowing_values_load_into_float_tensors_as_pytorch_does():
    torch = pytest.importorskip("torch")
    ours, theirs = nn.Linear(2, 1), torch.nn.Linear(2, 1)
    weight = np.array([[np.nan, 1e300]])
    ours.load_state_dict({"weight": weight, "bias": np.zeros(1)})
    theirs.load_state_dict({"weight": torch.tensor(weight), "bias": torch.zeros(1, dtype=torch.float64)})
    np.testing.assert_array_equal(ours.weight.numpy(), theirs.weight.detach().numpy())  # [nan, inf] in float32
