"""Containers and Module methods against PyTorch: Sequential (OrderedDict, slicing, insert, delete,
+, *), ModuleList, ModuleDict, ParameterList, ParameterDict; get_submodule/get_parameter/get_buffer,
register_module, named_* with remove_duplicate, half/bfloat16/type, requires_grad_; and the repr of
every layer, nested containers included; the ``nn.modules.*`` paths of isinstance checks.
"""
from collections import OrderedDict

import numpy as np
import pytest

import tinynorm as tn
from nn_compare import torch


def both(make):
    """``make(nn, lib)`` built with each library: (tinynorm's, PyTorch's)."""
    return make(tn.nn, tn), make(torch.nn, torch)


def names(module):
    return [name for name, _ in module.named_parameters()]


def same_structure(ours, theirs):
    assert repr(ours).replace("tinynorm.", "torch.") == repr(theirs)  # dtypes print as tinynorm.float32
    assert names(ours) == names(theirs)
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]


def raises_as_torch(call, ours, theirs):
    """``call(theirs)`` raises, and ``call(ours)`` raises the same class; tinynorm's error is returned."""
    with pytest.raises(Exception) as theirs_error:
        call(theirs)
    with pytest.raises(theirs_error.type) as ours_error:
        call(ours)
    return ours_error, theirs_error


def same_after(build, operations, lib_of=lambda lib: lib.nn):
    """Each of ``operations(container, namespace)`` leaves the two libraries' containers alike."""
    for operation in operations:
        ours, theirs = both(build)
        operation(ours, lib_of(tn))
        operation(theirs, lib_of(torch))
        same_structure(ours, theirs)
        assert len(ours) == len(theirs)
        if hasattr(theirs, "keys"):
            assert list(ours.keys()) == list(theirs.keys()) == list(ours)


# ----------------------------------------------------------------------------- Sequential
def test_sequential_of_an_ordered_dict_keeps_the_names():
    ours, theirs = both(lambda nn, lib: nn.Sequential(OrderedDict([("fc", nn.Linear(2, 3)), ("act", nn.ReLU()),
                                                                  ("out", nn.Linear(3, 1))])))
    same_structure(ours, theirs)
    assert type(ours[0]).__name__ == "Linear" and isinstance(ours[-1], tn.nn.Linear) and ours.fc is ours[0]
    same_structure(ours[1:], theirs[1:])  # a slice keeps the names, as PyTorch's
    x = np.random.default_rng(0).standard_normal((4, 2)).astype(np.float32)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    np.testing.assert_allclose(ours(tn.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-6)


def test_sequential_list_operations_match_torch():
    def build(nn, lib):
        return nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 3))

    same_after(build, (lambda s, nn: s.append(nn.Tanh()), lambda s, nn: s.insert(1, nn.Sigmoid()),
                       lambda s, nn: s.insert(-1, nn.Sigmoid()), lambda s, nn: s.extend([nn.Tanh(), nn.ReLU()]),
                       lambda s, nn: s.__delitem__(0), lambda s, nn: s.__delitem__(slice(0, 2)),
                       lambda s, nn: s.pop(1), lambda s, nn: s.__setitem__(-1, nn.Tanh()),
                       lambda s, nn: s.__iadd__(nn.Sequential(nn.Tanh()))))
    ours, theirs = both(build)
    same_structure(ours + ours, theirs + theirs)
    same_structure(ours * 2, theirs * 2)
    same_structure(ours[::-1], theirs[::-1])
    for bad in (lambda s: s[3], lambda s: s.insert(5, s[0]), lambda s: s + [1], lambda s: s * 0, lambda s: s * 1.5):
        raises_as_torch(bad, ours, theirs)


# ----------------------------------------------------------------------------- ModuleList, ModuleDict
def test_module_list_operations_and_repr_match_torch():
    def build(nn, lib):
        return nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU(), nn.ReLU()])

    ours, theirs = both(build)
    same_structure(ours, theirs)
    same_after(build, (lambda m, nn: m.append(nn.Tanh()), lambda m, nn: m.insert(0, nn.Tanh()),
                       lambda m, nn: m.extend([nn.Tanh()]), lambda m, nn: m.__delitem__(1),
                       lambda m, nn: m.__delitem__(slice(1, 3)), lambda m, nn: m.pop(-1),
                       lambda m, nn: m.__setitem__(0, nn.Tanh()), lambda m, nn: m.__iadd__([nn.Tanh()])))
    same_structure(ours[1:3], theirs[1:3])
    same_structure(ours + ours, theirs + theirs)
    with pytest.raises(IndexError):
        ours[len(ours)]
    with pytest.raises(TypeError, match="iterable"):
        ours.extend(tn.nn.ReLU())


def test_module_dict_matches_torch():
    def build(nn, lib):
        return nn.ModuleDict({"conv": nn.Linear(2, 2), "act": nn.ReLU()})

    ours, theirs = both(build)
    same_structure(ours, theirs)
    same_after(build, (lambda m, nn: m.update({"z": nn.Tanh(), "a": nn.ReLU()}),
                       lambda m, nn: m.update([("z", nn.Tanh())]), lambda m, nn: m.pop("conv"),
                       lambda m, nn: m.__setitem__("act", nn.Tanh()), lambda m, nn: m.__delitem__("act"),
                       lambda m, nn: m.clear()))
    ours, theirs = both(build)
    assert "act" in ours and isinstance(ours["act"], tn.nn.ReLU)
    for bad in (lambda m: m.update(3), lambda m: m.update([("a",)]), lambda m: m.__setitem__("a.b", m["act"]),
                lambda m: m.__setitem__(1, m["act"])):
        raises_as_torch(bad, ours, theirs)


# ----------------------------------------------------------------------------- ParameterList, ParameterDict
def test_parameter_list_matches_torch():
    def build(nn, lib):
        return nn.ParameterList([nn.Parameter(lib.ones(2)), lib.zeros(2, 3)])

    ours, theirs = both(build)
    same_structure(ours, theirs)
    assert all(isinstance(p, tn.nn.Parameter) for p in ours)
    ours.append(tn.ones(4))
    theirs.append(torch.ones(4))
    ours += [tn.ones(1, dtype=tn.float64)]
    theirs += [torch.ones(1, dtype=torch.float64)]
    same_structure(ours, theirs)
    same_structure(ours[1:3], theirs[1:3])
    assert len(ours) == len(theirs) == 4 and ours[-1].dtype == tn.float64
    with pytest.raises(RuntimeError):
        ours(1)
    with pytest.raises(TypeError):
        ours.extend(tn.ones(2))


def test_parameter_dict_matches_torch():
    def build(nn, lib):
        return nn.ParameterDict({"b": nn.Parameter(lib.ones(2)), "a": lib.zeros(1)})  # a dict: sorted keys

    ours, theirs = both(build)
    same_structure(ours, theirs)
    assert list(ours) == list(theirs) == ["a", "b"]
    same_after(build, (lambda d, lib: d.update(OrderedDict([("z", lib.ones(1)), ("c", lib.ones(2))])),
                       lambda d, lib: d.pop("a"), lambda d, lib: d.setdefault("q", lib.ones(3)),
                       lambda d, lib: d.popitem(), lambda d, lib: d.__delitem__("b"), lambda d, lib: d.clear()),
               lib_of=lambda lib: lib)
    ours, theirs = both(build)
    same_structure(ours | tn.nn.ParameterDict({"c": tn.ones(1)}), theirs | torch.nn.ParameterDict({"c": torch.ones(1)}))
    assert ours.get("zz", 5) == 5 and "a" in ours
    with pytest.raises(TypeError):
        ours[1] = tn.ones(1)


def test_containers_register_their_contents_for_the_parent():
    class Net(tn.nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = tn.nn.ModuleDict({"a": tn.nn.Linear(2, 2)})
            self.scales = tn.nn.ParameterList([tn.ones(2)])
            self.extra = tn.nn.ParameterDict({"w": tn.zeros(3)})

    net = Net()
    assert names(net) == ["blocks.a.weight", "blocks.a.bias", "scales.0", "extra.w"]
    assert list(net.state_dict()) == names(net)
    net.to(tn.float64)
    assert all(p.dtype == tn.float64 for p in net.parameters())


# ----------------------------------------------------------------------------- Module methods
class Block:
    @staticmethod
    def build(nn, lib):
        model = nn.Sequential(OrderedDict([("body", nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))),
                                           ("head", nn.Linear(3, 1))]))
        model.register_module("tail", nn.ReLU())
        return model


def test_get_submodule_parameter_and_buffer_match_torch():
    ours, theirs = both(Block.build)
    assert names(ours) == names(theirs)
    assert ours.get_submodule("body.1") is ours.body[1] and ours.get_submodule("") is ours
    assert ours.get_parameter("body.0.weight") is ours.body[0].weight
    assert ours.get_buffer("body.1.running_mean") is ours.body[1].running_mean
    for call in (lambda m: m.get_submodule("body.7"), lambda m: m.get_submodule("body.0.weight"),
                 lambda m: m.get_parameter("body.1.running_mean"), lambda m: m.get_parameter("head.nothing"),
                 lambda m: m.get_buffer("body.0.weight"), lambda m: m.get_buffer("nothing.x")):
        ours_error, theirs_error = raises_as_torch(call, ours, theirs)
        assert ours_error.type is AttributeError and str(ours_error.value) == str(theirs_error.value)


def test_registration_errors_match_torch():
    for call in (lambda m, nn, lib: m.register_module("a.b", nn.ReLU()),
                 lambda m, nn, lib: m.register_module("", nn.ReLU()),
                 lambda m, nn, lib: m.add_module("x", 3),
                 lambda m, nn, lib: m.register_buffer("b", 3),
                 lambda m, nn, lib: m.register_parameter("p", lib.ones(2)),
                 lambda m, nn, lib: m.register_buffer("training", lib.ones(2))):
        raises_as_torch(lambda lib: call(lib.nn.Linear(2, 2), lib.nn, lib), tn, torch)


def test_named_members_with_shared_modules_match_torch():
    def build(nn, lib):
        shared = nn.Linear(2, 2)
        return nn.Sequential(shared, nn.ReLU(), shared)

    ours, theirs = both(build)
    for method in ("named_parameters", "named_modules", "named_buffers"):
        for remove_duplicate in (True, False):
            ours_names = [n for n, _ in getattr(ours, method)(remove_duplicate=remove_duplicate)]
            assert ours_names == [n for n, _ in getattr(theirs, method)(remove_duplicate=remove_duplicate)]
    assert [n for n, _ in ours.named_parameters(prefix="m", recurse=True)] == \
        [n for n, _ in theirs.named_parameters(prefix="m", recurse=True)]
    assert [n for n, _ in ours.named_modules(prefix="m")] == [n for n, _ in theirs.named_modules(prefix="m")]
    model, reference = both(Block.build)
    assert [n for n, _ in model.named_buffers()] == [n for n, _ in reference.named_buffers()]
    assert [n for n, _ in model.named_buffers(recurse=False)] == []


def test_state_dict_options_and_shared_modules_match_torch():
    """A module reached by two paths is saved under both names (so PyTorch's checkpoint of a model with a
    shared layer loads strictly); ``prefix``, ``keep_vars`` and ``destination`` as PyTorch's."""
    def build(nn, lib):
        shared = nn.Linear(2, 2)
        return nn.Sequential(shared, nn.BatchNorm1d(2), shared)

    ours, theirs = both(build)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert list(ours.state_dict(prefix="model.")) == list(theirs.state_dict(prefix="model."))
    kept = ours.state_dict(keep_vars=True)
    assert kept["0.weight"] is ours[0].weight and kept["2.weight"] is ours[0].weight
    detached = ours.state_dict()["2.weight"]
    assert not detached.requires_grad and np.shares_memory(detached.numpy(), ours[0].weight.numpy())
    destination = OrderedDict(step=1)
    assert ours.state_dict(destination=destination) is destination
    assert list(destination) == ["step"] + list(theirs.state_dict())
    checkpoint = {key: tn.tensor(value.detach().numpy()) for key, value in theirs.state_dict().items()}
    ours.load_state_dict(checkpoint)
    np.testing.assert_array_equal(ours[2].weight.numpy(), theirs[2].weight.detach().numpy())


def test_dtype_methods_and_requires_grad_match_torch():
    model = Block.build(tn.nn, tn).half()
    assert model.head.weight.dtype == tn.float16 and model.body[1].num_batches_tracked.dtype == tn.int64
    model.float()
    assert model.requires_grad_(False) is model and not any(p.requires_grad for p in model.parameters())
    with pytest.raises(NotImplementedError, match="bfloat16"):
        model.bfloat16()
    model.type(tn.float64)
    assert {b.dtype for b in model.buffers()} == {tn.float64}  # type() casts every tensor, as PyTorch's
    assert model.cpu() is model


def test_data_initialisation_writes_through_shared_memory():
    """``p.data.normal_()``, ``p.data.fill_()`` and ``p.data.copy_()``: the parameter itself changes,
    with no error even though it is a leaf that requires grad."""
    layer = tn.nn.Linear(20, 30)
    tn.manual_seed(0)
    layer.weight.data.normal_(0.0, 0.02)
    layer.bias.data.fill_(0.5)
    assert abs(layer.weight.numpy().std() - 0.02) < 0.003 and np.all(layer.bias.numpy() == 0.5)
    layer.weight.data.copy_(tn.ones(30, 20))
    assert np.all(layer.weight.numpy() == 1) and layer.weight.requires_grad and layer.weight.is_leaf


# ----------------------------------------------------------------------------- reprs
LAYERS = {
    "Linear": lambda nn, lib: nn.Linear(3, 2), "Linear nobias": lambda nn, lib: nn.Linear(3, 2, bias=False),
    "Conv2d": lambda nn, lib: nn.Conv2d(3, 8, 3), "Conv2d pad": lambda nn, lib: nn.Conv2d(3, 8, 3, padding=1, bias=False),
    "LayerNorm": lambda nn, lib: nn.LayerNorm(4), "LayerNorm shape": lambda nn, lib: nn.LayerNorm((4, 5), 1e-6, False),
    "RMSNorm": lambda nn, lib: nn.RMSNorm(4), "RMSNorm eps": lambda nn, lib: nn.RMSNorm([4], eps=1e-6),
    "BatchNorm2d": lambda nn, lib: nn.BatchNorm2d(3),
    "BatchNorm1d options": lambda nn, lib: nn.BatchNorm1d(3, 1e-3, None, False, False),
    "BatchNorm3d nobias": lambda nn, lib: nn.BatchNorm3d(3, momentum=0.01, bias=False),
    "SyncBatchNorm": lambda nn, lib: nn.SyncBatchNorm(4), "InstanceNorm1d": lambda nn, lib: nn.InstanceNorm1d(3),
    "InstanceNorm2d affine": lambda nn, lib: nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
    "GroupNorm": lambda nn, lib: nn.GroupNorm(2, 4), "GroupNorm options": lambda nn, lib: nn.GroupNorm(1, 4, 1e-6, False),
    "Flatten": lambda nn, lib: nn.Flatten(), "Flatten dims": lambda nn, lib: nn.Flatten(0, 2),
    "Embedding": lambda nn, lib: nn.Embedding(5, 2, padding_idx=1),
    "Nested": lambda nn, lib: nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Linear(3, 3), nn.Dropout()),
                                            nn.ModuleList([nn.Tanh(), nn.Tanh()]), nn.ModuleDict({"x": nn.GELU()})),
    "Empty containers": lambda nn, lib: nn.Sequential(nn.ModuleList(), nn.ModuleDict(), nn.Sequential()),
    "ParameterList": lambda nn, lib: nn.ParameterList([nn.Parameter(lib.ones(2)), lib.zeros(2, 3, dtype=lib.float64)]),
    "ParameterList one": lambda nn, lib: nn.ParameterList([lib.ones(2)]),
    "ParameterDict": lambda nn, lib: nn.ParameterDict({"b": lib.ones(2), "a": lib.zeros(1, dtype=lib.float64)}),
    "Losses": lambda nn, lib: nn.Sequential(nn.CrossEntropyLoss(weight=lib.ones(3)), nn.BCEWithLogitsLoss()),
}


@pytest.mark.parametrize("name", LAYERS)
def test_layer_reprs_match_torch(name):
    ours, theirs = both(LAYERS[name])
    assert repr(ours).replace("tinynorm.", "torch.") == repr(theirs)  # dtypes print as tinynorm.float32


def test_custom_module_repr_with_a_multiline_extra_repr_matches_torch():
    def build(nn, lib):
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)

            def extra_repr(self):
                return "first line\nsecond line"

        return Net()

    ours, theirs = both(build)
    assert repr(ours).replace("tinynorm.", "torch.") == repr(theirs)  # dtypes print as tinynorm.float32


def test_nn_modules_paths_for_isinstance_checks():
    modules = tn.nn.modules
    bn = tn.nn.BatchNorm2d(3)
    assert isinstance(bn, modules.batchnorm._BatchNorm) and isinstance(bn, modules.batchnorm._NormBase)
    assert isinstance(tn.nn.SyncBatchNorm(3), modules.batchnorm._BatchNorm)
    assert not isinstance(tn.nn.InstanceNorm2d(3), modules.batchnorm._BatchNorm)
    assert isinstance(tn.nn.InstanceNorm2d(3), modules.instancenorm._InstanceNorm)
    assert modules.module.Module is tn.nn.Module and modules.linear.Linear is tn.nn.Linear
    assert modules.conv.Conv2d is tn.nn.Conv2d and modules.activation.ReLU is tn.nn.ReLU
    assert isinstance(tn.nn.MSELoss(), modules.loss._Loss) and isinstance(tn.nn.NLLLoss(), modules.loss._WeightedLoss)
    assert modules.container.Sequential is tn.nn.Sequential and modules.pooling.MaxPool2d is tn.nn.MaxPool2d
    assert modules.normalization.LayerNorm is tn.nn.LayerNorm and modules.sparse.Embedding is tn.nn.Embedding
    assert modules.dropout.Dropout is tn.nn.Dropout and modules.flatten.Unflatten is tn.nn.Unflatten
    assert modules.upsampling.Upsample is tn.nn.Upsample and modules.distance.CosineSimilarity is tn.nn.CosineSimilarity

    model = tn.nn.Sequential(tn.nn.Conv2d(1, 2, 3), tn.nn.BatchNorm2d(2), tn.nn.ReLU())
    model[1].running_mean.fill_(5.0)
    for module in model.modules():  # the seed tutorials' "reset BN statistics" idiom
        if isinstance(module, tn.nn.modules.batchnorm._BatchNorm):
            module.reset_running_stats()
    assert not model[1].running_mean.numpy().any()
