"""nn.Module bookkeeping (registration, traversal, modes, state dicts), Linear/Embedding and nn.init,
checked against PyTorch where it is installed."""
import math

import numpy as np
import pytest

import tinynorm
from tinynorm import nn


def build_block(module, lib_nn, make_tensor):
    """Give ``module`` a parameter registered between submodules, plus persistent and non-persistent
    buffers; the same code builds the tinynorm model and its PyTorch twin."""
    module.fc1 = lib_nn.Linear(3, 4)
    module.scale = lib_nn.Parameter(make_tensor(np.ones(4, dtype=np.float32)))
    module.register_buffer("steps", make_tensor(np.zeros((), dtype=np.int64)))
    module.register_buffer("cache", make_tensor(np.zeros(2, dtype=np.float32)), persistent=False)
    module.body = lib_nn.Sequential(lib_nn.ReLU(), lib_nn.Linear(4, 4, bias=False),
                                    lib_nn.ModuleList([lib_nn.Linear(4, 2)]))
    module.head = lib_nn.Linear(2, 1)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        build_block(self, nn, tinynorm.tensor)


def torch_block(torch):
    class TorchBlock(torch.nn.Module):
        def __init__(self):
            super().__init__()
            build_block(self, torch.nn, torch.tensor)

    return TorchBlock()


# ----------------------------------------------------------------------------- registration
def test_parameters_submodules_and_buffers_are_registered():
    block = Block()
    assert [name for name, _ in block.named_children()] == ["fc1", "body", "head"]
    assert block.scale is block._parameters["scale"]
    assert [name for name, _ in block.named_buffers()] == ["steps", "cache"]
    assert "cache" not in block.state_dict() and "steps" in block.state_dict()
    assert block.num_parameters() == 3 * 4 + 4 + 4 + 16 + 4 * 2 + 2 + 2 + 1


def test_reassigning_and_deleting_registered_names():
    layer = nn.Linear(2, 2)
    layer.bias = None
    assert [name for name, _ in layer.named_parameters()] == ["weight"] and "bias" not in layer.state_dict()
    with pytest.raises(TypeError, match="'weight'"):
        layer.weight = tinynorm.ones(2, 2)  # a plain tensor where a Parameter was
    del layer.weight
    assert list(layer.parameters()) == []


def test_forgetting_super_init_is_a_clear_error():
    class Broken(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match="super"):
        Broken()


def test_shared_parameters_are_listed_once():
    shared = nn.Linear(2, 2)
    model = nn.Sequential(shared, shared)
    assert len(list(model.parameters())) == 2 and len(list(model.modules())) == 2


def test_traversal_order_equals_pytorch():
    torch = pytest.importorskip("torch")
    ours, theirs = Block(), torch_block(torch)
    for method in ("named_parameters", "named_buffers", "named_modules"):
        assert [n for n, _ in getattr(ours, method)()] == [n for n, _ in getattr(theirs, method)()], method
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.num_parameters() == sum(p.numel() for p in theirs.parameters())


def test_repr_equals_pytorch():
    torch = pytest.importorskip("torch")
    ours = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.GELU("tanh"), nn.Sequential(nn.Linear(3, 1, bias=False)))
    theirs = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.GELU("tanh"),
                                 torch.nn.Sequential(torch.nn.Linear(3, 1, bias=False)))
    assert repr(ours) == repr(theirs)


# ------------------------------------------------------------------------------------ modes
def test_train_and_eval_reach_every_submodule():
    block = Block()
    assert block.eval() is block
    assert not any(m.training for m in block.modules())
    block.train()
    assert all(m.training for m in block.modules())


def test_dropout_module_is_identity_in_eval_mode():
    layer = nn.Dropout(0.5)
    x = tinynorm.ones(100)
    assert (layer(x).numpy() == 0).any()
    assert layer.eval()(x) is x


def test_zero_grad_sets_to_none_or_zeros():
    layer = nn.Linear(2, 2)
    output = layer(tinynorm.ones(1, 2)).sum()
    output.backward()
    layer.zero_grad(set_to_none=False)
    assert all(p.grad is not None and (p.grad.numpy() == 0).all() for p in layer.parameters())
    layer.zero_grad()
    assert all(p.grad is None for p in layer.parameters())


def test_requires_grad_apply_and_to():
    block = Block()
    block.requires_grad_(False)
    assert not any(p.requires_grad for p in block.parameters())
    visited = []
    block.apply(lambda m: visited.append(type(m).__name__))
    assert visited[-1] == "Block" and visited[0] == "Linear"  # children first, as PyTorch
    block.to(tinynorm.float64)
    assert all(p.dtype == np.float64 for p in block.parameters())
    assert block.steps.dtype == np.int64 and block.cache.dtype == np.float64  # only floats change


def test_apply_order_equals_pytorch():
    torch = pytest.importorskip("torch")
    ours, theirs = [], []
    Block().apply(lambda m: ours.append(type(m).__name__))
    torch_block(torch).apply(lambda m: theirs.append(type(m).__name__))
    assert ours == [name.replace("TorchBlock", "Block") for name in theirs]


# ------------------------------------------------------------------------------- state dict
def test_state_dict_round_trip_copies_values_and_keeps_dtypes():
    source, target = Block(), Block()
    source.steps.fill_(5)
    state = {k: v.numpy().astype(np.float64) if v.dtype.kind == "f" else v for k, v in source.state_dict().items()}
    result = target.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for (name, a), (_, b) in zip(source.state_dict().items(), target.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
        assert a.dtype == b.dtype
    assert target.steps.item() == 5


def test_state_dict_shares_memory_but_is_detached():
    layer = nn.Linear(2, 2)
    weight = layer.state_dict()["weight"]
    assert not weight.requires_grad and np.shares_memory(weight.numpy(), layer.weight.numpy())


def test_strict_loading_lists_missing_and_unexpected_keys():
    layer = nn.Linear(2, 2)
    state = {"weight": np.zeros((2, 2), np.float32), "extra": np.zeros(1)}
    with pytest.raises(RuntimeError, match=r"missing keys \['bias'\].*unexpected keys \['extra'\]"):
        layer.load_state_dict(state)
    result = layer.load_state_dict(state, strict=False)
    assert result.missing_keys == ["bias"] and result.unexpected_keys == ["extra"]
    assert (layer.weight.numpy() == 0).all()


def test_loading_a_wrong_shape_or_an_int_into_a_float_names_the_key():
    layer = nn.Linear(2, 3)
    good_bias = np.zeros(3, np.float32)
    with pytest.raises(RuntimeError, match=r"weight: size mismatch: copying a param with shape \(2, 3\).*\(3, 2\)"):
        layer.load_state_dict({"weight": np.zeros((2, 3), np.float32), "bias": good_bias})
    with pytest.raises(RuntimeError, match="weight: dtype int64"):
        layer.load_state_dict({"weight": np.zeros((3, 2), np.int64), "bias": good_bias})


def test_linear_state_dict_loads_into_torch_and_gives_the_same_outputs():
    torch = pytest.importorskip("torch")
    ours = nn.Linear(5, 3)
    theirs = torch.nn.Linear(5, 3)
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in ours.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(ours(tinynorm.tensor(x)).numpy(), theirs(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------- layers and initialisation
def test_linear_init_is_uniform_within_one_over_sqrt_fan_in():
    tinynorm.manual_seed(0)
    layer = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    for p in (layer.weight.numpy(), layer.bias.numpy()):
        assert np.abs(p).max() <= bound
        assert np.abs(p).max() > 0.95 * bound
    np.testing.assert_allclose(layer.weight.numpy().std(), bound / math.sqrt(3), rtol=0.02)
    assert layer.weight.dtype == np.float32 and nn.Linear(2, 2, dtype=tinynorm.float64).weight.dtype == np.float64


def test_linear_rejects_bad_sizes_and_inputs():
    with pytest.raises(ValueError, match="in_features"):
        nn.Linear(0, 2)
    with pytest.raises(ValueError, match=r"4 features.*\(2, 3\)"):
        nn.Linear(3, 2)(tinynorm.ones(1, 4))


def test_embedding_init_and_lookup():
    tinynorm.manual_seed(0)
    table = nn.Embedding(1000, 16)
    assert abs(table.weight.numpy().std() - 1) < 0.02
    ids = tinynorm.tensor([[3, 999], [0, 3]])
    np.testing.assert_array_equal(table(ids).numpy(), table.weight.numpy()[ids.numpy()])
    with pytest.raises(IndexError, match="999"):
        table(tinynorm.tensor([1000]))
    with pytest.raises(RuntimeError, match="Long, Int"):  # PyTorch's class and message
        table(tinynorm.tensor([1.0]))


@pytest.mark.parametrize("name, kwargs, expected_bound", [
    ("xavier_uniform_", {}, math.sqrt(6 / (200 + 100))),
    ("xavier_uniform_", {"gain": 2.0}, 2 * math.sqrt(6 / (200 + 100))),
    ("kaiming_uniform_", {"nonlinearity": "relu"}, math.sqrt(2) * math.sqrt(3 / 200)),
    ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"}, math.sqrt(2) * math.sqrt(3 / 100)),
    ("uniform_", {"a": -0.3, "b": 0.3}, 0.3),
])
def test_uniform_init_bounds(name, kwargs, expected_bound):
    weight = tinynorm.empty(100, 200)
    getattr(nn.init, name)(weight, **kwargs)
    values = weight.numpy()
    assert np.abs(values).max() <= expected_bound and np.abs(values).max() > 0.99 * expected_bound


@pytest.mark.parametrize("name, kwargs, expected_std", [
    ("xavier_normal_", {}, math.sqrt(2 / (200 + 100))),
    ("kaiming_normal_", {"nonlinearity": "relu"}, math.sqrt(2 / 200)),
    ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "tanh"}, (5 / 3) / math.sqrt(100)),
    ("normal_", {"mean": 1.0, "std": 0.5}, 0.5),
])
def test_normal_init_std(name, kwargs, expected_std):
    weight = tinynorm.empty(100, 200)
    getattr(nn.init, name)(weight, **kwargs)
    np.testing.assert_allclose(weight.numpy().std(), expected_std, rtol=0.03)


def test_constant_inits_and_gains_equal_pytorch():
    weight = tinynorm.empty(2, 3)
    nn.init.constant_(weight, 0.25)
    assert (weight.numpy() == 0.25).all()
    assert (nn.init.zeros_(weight).numpy() == 0).all() and (nn.init.ones_(weight).numpy() == 1).all()
    assert nn.init.calculate_fan_in_and_fan_out(tinynorm.empty(8, 4, 3, 3)) == (36, 72)
    torch = pytest.importorskip("torch")
    for nonlinearity, param in [("relu", None), ("tanh", None), ("leaky_relu", 0.2), ("linear", None), ("selu", None)]:
        expected = torch.nn.init.calculate_gain(nonlinearity, param)
        assert nn.init.calculate_gain(nonlinearity, param) == pytest.approx(expected)


# ------------------------------------------------------------------------------- containers
def test_sequential_and_module_list_behave_like_lists():
    first, second = nn.Linear(2, 3), nn.ReLU()
    model = nn.Sequential(first, second)
    assert len(model) == 2 and model[0] is first and list(model) == [first, second]
    assert isinstance(model[:1], nn.Sequential) and model[:1][0] is first
    x = tinynorm.randn(4, 2)
    np.testing.assert_array_equal(model(x).numpy(), np.maximum(first(x).numpy(), 0))
    layers = nn.ModuleList([nn.Linear(1, 1)]).extend([nn.Linear(1, 1)])
    assert len(layers) == 2 and len(list(layers.parameters())) == 4
