"""Tensor methods and properties against PyTorch: dtype conversions (int, long, bool, half, double, type,
type_as), is_floating_point, element_size, new_* tensors, nelement, dim, size(d), is_cuda, tolist,
``__format__``, PyTorch's ``repr`` on many tensors, ``set_printoptions``, ``tinynorm.device`` and
``tinynorm.Size``.
"""
import copy
import math
import pickle

import numpy as np
import pytest
from api_compare import check, torch

import tinynorm as tn

X = [[1.5, -2.5, 3.25], [0.5, 2.0, -1.75]]


@pytest.fixture(params=["cpu"])
def device(request):
    return request.param


def test_dtype_conversions(device):
    check(lambda lib, make: (make(X).int(), make(X).long(), make(X).bool(), make(X).half(), make(X).double(),
                             make([1, 0, 2]).float(), make(X).short(), make([3, 250]).byte(), make([3, -2]).char()),
          device)
    check(lambda lib, make: make(X, requires_grad=True).double() * 2, device)
    check(lambda lib, make: (make(X).type(lib.int32), make(X).type_as(make([1, 2])), make(X).to(make([True]))), device)
    check(lambda lib, make: (make(X).is_floating_point(), make([1]).is_floating_point(), lib.is_floating_point(make(X)),
                             lib.is_tensor(make(X)), lib.is_tensor(X)), device)


def test_type_names(device):
    def case(lib, make):
        prefix = lib.__name__ + "."
        names = [make(X).type(), make([1]).type(), make([True]).type(), make(X, dtype="float64").type()]
        converted = make(X).type(prefix + "DoubleTensor")
        return [name.replace(prefix, "").replace("cuda.", "") for name in names], converted

    check(case, device)


def test_sizes_and_counts(device):
    check(lambda lib, make: (make(X).element_size(), make(X, dtype="float64").element_size(),
                             make([True]).element_size(), make(X).nelement(), make(X).numel(), lib.numel(make(X)),
                             make(X).dim(), make(X).ndimension(), make(X).size(1), make(X).size(-1),
                             make(X).size(dim=0), make(X).size(), make(X).shape, make(3.0).shape, len(make(X))),
          device)
    check(lambda lib, make: make(X).size(2), device)
    check(lambda lib, make: make(X).size(1.0), device)
    check(lambda lib, make: make(3.0).size(0), device)


def test_new_tensors_take_this_tensors_dtype_and_device(device):
    check(lambda lib, make: (make(X).new_zeros(2, 3), make(X).new_ones((2,)), make([1, 2]).new_full((2, 2), 7),
                             make(X, dtype="float64").new_full((1,), 2.5), make(X).new_tensor([1, 2]),
                             make([1, 2]).new_tensor([1.5]), make(X).new_zeros(2, dtype=lib.int64),
                             make(X).new_empty(4).shape, make(X).new_ones(2, requires_grad=True)), device)

    def on_the_same_device(lib, make):
        if lib is torch:
            return True, True
        x = make(X)
        return x.new_zeros(2).device == x.device, x.new_tensor([1]).device == x.device

    check(on_the_same_device, device)


def test_tolist_and_item(device):
    check(lambda lib, make: (make(X).tolist(), make([1, 2]).tolist(), make(2.5).tolist(), make([True]).tolist(),
                             make(3).item(), make([[2.5]]).item(), int(make(7)), float(make(1.5)),
                             [1, 2, 3][make(2)]), device)
    for bad in (lambda lib, make: make([1.0, 2.0]).item(), lambda lib, make: bool(make([1.0, 2.0])),
                lambda lib, make: float(make([[1.0], [2.0]])), lambda lib, make: [1, 2][make(1.0)],
                lambda lib, make: [1, 2][make([0, 1])]):
        check(bad, device)


def test_membership_and_iteration(device):
    check(lambda lib, make: (2.0 in make(X), 7 in make([1, 2]), make(0.5) in make(X), [r for r in make(X)],
                             list(reversed(make([1, 2, 3]))), [r for r in make([])]), device)
    for bad in (lambda lib, make: [1, 2] in make([1, 2]), lambda lib, make: None in make(X),
                lambda lib, make: list(make(1.0))):
        check(bad, device)


def test_format(device):
    check(lambda lib, make: (f"{make(3.14159):.3f}", f"{make(2):d}", f"{make(2.5)}", f"{make(1e-8):e}",
                             f"{make(0.5, requires_grad=True) * 3:.2%}", f"{make(X):}" == str(make(X)),
                             "{:>8.2f}".format(make(1.0))), device)
    check(lambda lib, make: f"{make([2.5]):.2f}", device)
    check(lambda lib, make: f"{make(X):.2f}", device)


def test_is_cuda_device_and_repr_suffix(device):
    x = tn.tensor(X, device=device)
    assert x.is_cuda == (device == "cuda")
    assert isinstance(x.device, tn.device) and x.device.type == device
    assert x.device == tn.device(device) and x.device == device
    suffix = ", device='cuda:0')" if device == "cuda" else ")"
    assert repr(tn.tensor([1.0, 2.0], device=device)) == "tensor([1., 2.]" + suffix
    assert repr(tn.tensor([1, 2], dtype="int32", device=device)) == "tensor([1, 2]" + (
        ", device='cuda:0', dtype=tinynorm.int32)" if device == "cuda" else ", dtype=tinynorm.int32)")
    assert tn.zeros(2, device=tn.device(device)).device == x.device
    assert x.to(tn.device("cpu")).device == tn.device("cpu")
    assert str((x * 2).device) == ("cuda:0" if device == "cuda" else "cpu")


# ------------------------------------------------------------------------------------- repr
REPR_CASES = [
    ([1.0, 2.0], {}), ([1.5, 2.25, -3.125], {}), ([1e-5, 1.0], {}), ([1e10, 1.0], {}), ([123456789.0], {}),
    ([0.0001, 0.001], {}), ([1000.0, 1.0], {}), ([1001.0, 1.0], {}), ([1e-4, 0.5], {}), ([99999999.0, 1.0], {}),
    ([1, 22, -333], {}), ([True, False], {}), ([3, 250], {"dtype": "uint8"}), ([1, 2], {"dtype": "int32"}),
    ([1.5, 2.0], {"dtype": "float64"}), ([1.5, 2.0], {"dtype": "float16"}), ([1.0, -2.0], {"dtype": "float64"}),
    ([float("nan"), float("inf"), -float("inf"), 1.5], {}), ([float("nan"), 1.0, 2.0], {}), ([0.0, 0.0], {}),
    ([-0.0, 1.0], {}), ([float("nan")], {}), ([float("inf"), -float("inf")], {}), (3.5, {}), (3, {}), (True, {}),
    (2.0, {"dtype": "float64"}), (-0.0001234, {}), ([], {}), ([], {"dtype": "int64"}), ([[]], {}),
    ([[]], {"dtype": "float64"}), (X, {}), ([[1, 2], [3, 4]], {}), ([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.5]]], {}),
    ([[1e-8, 1.0], [2.0, 3.0]], {}), ([[1.0, 2.0], [3.0, 4.0]], {"requires_grad": True}),
    ([i * 1.5 for i in range(30)], {}), ([i * 1.5 for i in range(30)], {"requires_grad": True}),
    ([i * 12345.678 for i in range(25)], {"dtype": "float64"}), ([10 ** i for i in range(12)], {}),
    ([[i * 0.37 - 4 for i in range(40)]] * 3, {}),
]


def _repr_pair(values, kwargs, transform=None):
    dtype = kwargs.get("dtype")
    ours = tn.tensor(values, dtype=dtype, requires_grad=kwargs.get("requires_grad", False))
    theirs = torch.tensor(values, dtype=None if dtype is None else getattr(torch, dtype),
                          requires_grad=kwargs.get("requires_grad", False))
    if transform is not None:
        ours, theirs = transform(ours), transform(theirs)
    return repr(ours), repr(theirs).replace("torch.", "tinynorm.")


@pytest.mark.parametrize("values, kwargs", REPR_CASES)
def test_repr_is_pytorchs(values, kwargs):
    ours, theirs = _repr_pair(values, kwargs)
    assert ours == theirs


@pytest.mark.parametrize("transform", [
    lambda t: t * 2, lambda t: t.sum(), lambda t: t.exp(), lambda t: t[0], lambda t: t.reshape(-1),
    lambda t: t.max(0), lambda t: t.sort(1), lambda t: t.std(unbiased=False), lambda t: t.t(),
])
def test_repr_of_computed_tensors_names_their_grad_fn(transform):
    ours, theirs = _repr_pair(X, {"requires_grad": True}, transform)
    assert ours == theirs


@pytest.mark.parametrize("shape", [(2000,), (40, 50), (10, 10, 20), (3, 400), (1001,), (7, 3, 50)])
def test_repr_summarizes_large_tensors(shape):
    values = (np.arange(np.prod(shape)).reshape(shape) * 0.25 - 3).tolist()
    ours, theirs = _repr_pair(values, {})
    assert ours == theirs
    ours, theirs = _repr_pair(values, {"dtype": "int64"}, lambda t: (t * 4).long())
    assert ours == theirs


@pytest.mark.parametrize("options", [
    {"precision": 2}, {"precision": 6}, {"sci_mode": True}, {"sci_mode": False}, {"threshold": 5},
    {"edgeitems": 1, "threshold": 5}, {"linewidth": 40}, {"profile": "short"}, {"profile": "full"},
])
def test_print_options(options):
    values = [[1.23456789, -20.5, 3e-3, 4.0, 5.5, 6.25, 7.125], [8.0, 9.5, 10.75, 11.0, 12.5, 13.0, 14.0]]
    expected_options = torch._tensor_str.get_printoptions()
    try:
        with tn.printoptions(**options):
            ours = repr(tn.tensor(values))
        torch.set_printoptions(**options)
        theirs = repr(torch.tensor(values))
    finally:
        torch.set_printoptions(**expected_options)
    assert ours == theirs
    assert tn.get_printoptions() == {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80,
                                     "sci_mode": None}


def test_set_printoptions_refuses_an_unknown_profile():
    with pytest.raises(ValueError, match="profile"):
        tn.set_printoptions(profile="tiny")


def test_str_and_print_are_the_repr(capsys):
    x = tn.tensor(X)
    print(x)
    assert capsys.readouterr().out == repr(x) + "\n" and str(x) == repr(x)


# ---------------------------------------------------------------------------------- devices
def test_device_objects():
    assert repr(tn.device("cpu")) == repr(torch.device("cpu")) == "device(type='cpu')"
    assert repr(tn.device("cuda:0")) == repr(torch.device("cuda:0"))
    assert repr(tn.device("cuda", 0)) == "device(type='cuda', index=0)" and repr(tn.device(0)) == repr(tn.device("cuda:0"))
    for name in ("cpu", "cuda", "cuda:0", "cpu:0"):
        ours, theirs = tn.device(name), torch.device(name)
        assert (ours.type, ours.index, str(ours), f"{ours}", f"{ours:>8}") == \
            (theirs.type, theirs.index, str(theirs), f"{theirs}", f"{str(theirs):>8}")
    assert tn.device(tn.device("cuda:0")) == tn.device("cuda:0")
    assert pickle.loads(pickle.dumps(tn.device("cuda:0"))).index == 0
    assert tn.device("cpu") == "cpu" and {tn.device("cpu"): 1}["cpu"] == 1
    assert isinstance(tn.tensor(X).device, tn.device) and tn.tensor(X).device.type == "cpu"


@pytest.mark.parametrize("bad, error", [("foo", RuntimeError), ("CPU", RuntimeError), ("cuda:x", RuntimeError),
                                        ("cuda:-1", RuntimeError), (3.5, TypeError)])
def test_device_refuses_what_pytorch_refuses(bad, error):
    with pytest.raises(error):
        torch.device(bad)
    with pytest.raises(error):
        tn.device(bad)


def test_device_refuses_a_second_gpu_and_an_index_given_twice():
    with pytest.raises(ValueError, match="index 0"):
        tn.device("cuda:1")
    with pytest.raises(RuntimeError, match="index was passed explicitly"):
        tn.device("cuda:0", 0)
    with pytest.raises(TypeError, match="index"):
        tn.device("cuda", "a")


def test_devices_are_accepted_wherever_a_device_name_is():
    cpu = tn.device("cpu")
    assert tn.zeros(2, device=cpu).device == cpu and tn.tensor([1.0], device=cpu).device == cpu
    assert tn.ones(2).to(cpu).device == cpu and tn.ones(2).to(device=cpu, dtype=tn.float64).dtype == tn.float64
    assert tn.arange(3, device=cpu).device == cpu and tn.randn(2, device=cpu).device == cpu


# ------------------------------------------------------------------------------------- sizes
def test_size_is_a_tuple_that_prints_as_pytorchs():
    shape = tn.ones(2, 3).shape
    assert isinstance(shape, tn.Size) and isinstance(shape, tuple) and shape == (2, 3)
    assert repr(shape) == repr(torch.ones(2, 3).shape).replace("torch.", "tinynorm.") == "tinynorm.Size([2, 3])"
    assert str(tn.ones(()).shape) == "tinynorm.Size([])" and tn.ones(2, 3).size() == shape
    assert isinstance(shape[1:], tn.Size) and shape[1:] == (3,) and shape[-1] == 3 and isinstance(shape[0], int)
    assert isinstance(shape + (4,), tn.Size) and shape + (4,) == (2, 3, 4) and shape.numel() == 6
    assert tn.Size([2, np.int64(3)]) == (2, 3) and tn.Size() == () and pickle.loads(pickle.dumps(shape)) == shape
    assert tn.zeros(shape).shape == shape and tn.ones(2, 3).reshape(shape[::-1]).shape == (3, 2)
    with pytest.raises(TypeError, match="item 0 is 'float'"):
        tn.Size([2.0])
    with pytest.raises(TypeError):
        tn.Size(3)


DTYPE_NAMES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
               "half", "float", "double", "short", "int", "long"]


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtypes_are_pytorchs(name):
    """Each dtype prints, compares and answers as PyTorch's, and is numpy's dtype to numpy."""
    ours, theirs = getattr(tn, name), getattr(torch, name)
    assert isinstance(ours, tn.dtype) and str(ours) == repr(ours) == str(theirs).replace("torch.", "tinynorm.")
    assert f"{ours}" == str(ours) and ours == getattr(tn, str(ours).removeprefix("tinynorm."))
    assert (ours.is_floating_point, ours.is_signed, ours.is_complex, ours.itemsize) == \
        (theirs.is_floating_point, theirs.is_signed, theirs.is_complex, theirs.itemsize)
    numpy_dtype = np.dtype(str(theirs).removeprefix("torch."))
    assert ours == numpy_dtype and numpy_dtype == ours and hash(ours) == hash(numpy_dtype) and ours != tn.uint8 \
        or name == "uint8"
    assert np.zeros(2, ours).dtype == numpy_dtype and np.ones(2).astype(ours).dtype == numpy_dtype
    assert tn.zeros(2, dtype=ours).dtype is ours and tn.zeros(2, dtype=numpy_dtype).dtype is ours
    assert pickle.loads(pickle.dumps(ours)) is ours and copy.deepcopy(ours) is ours


def test_dtypes_of_tensors_and_promotion_are_pytorchs(device):
    check(lambda lib, make: (make(X).dtype, make([1, 2]).dtype, make([True]).dtype, make(X).half().dtype,
                             lib.get_default_dtype(), lib.result_type(make([1, 2]), 2.5),
                             lib.promote_types(lib.int8, lib.uint8), lib.promote_types(lib.int64, lib.float16)),
          device)
    texts = [(str(x.dtype), f"{x.dtype}", repr(x.dtype)) for x in (tn.tensor(X, device=device), tn.tensor([1]))]
    assert texts == [(str(x.dtype).replace("torch.", "tinynorm."),) * 3 for x in (torch.tensor(X), torch.tensor([1]))]
    assert "dtype=tinynorm.float64" in repr(tn.tensor(X, dtype=tn.float64, device=device))
    assert tn.tensor(X, device=device).dtype == np.float32 and tn.tensor(X, dtype="tinynorm.int32").dtype is tn.int32


def test_dtype_refuses_what_tinynorm_has_no_kernels_for():
    with pytest.raises(TypeError, match="unsupported dtype complex64"):
        tn.zeros(2, dtype=np.complex64)
    with pytest.raises(TypeError, match="dtype must be a dtype"):
        tn.zeros(2, dtype="tinynorm.nothing")
    assert not hasattr(tn, "bfloat16")  # numpy has none (docs/differences.md)


def test_legacy_tensor_constructor(device):
    check(lambda lib, make: (lib.Tensor([1, 2]), lib.Tensor([[1.5, 2], [3, 4]]), lib.Tensor((2, 3)), lib.Tensor(),
                             lib.Tensor(2, 3).shape, lib.Tensor(4).dtype, lib.Tensor(make([1, 2]))), device)
    for bad in (lambda lib, make: lib.Tensor(2.5), lambda lib, make: lib.Tensor("a"),
                lambda lib, make: lib.Tensor([1], [2])):
        check(bad, device)
    x = tn.tensor(X, device=device)
    assert tn.Tensor(x).data_ptr() == x.data_ptr() if device == "cpu" else tn.Tensor(x).array is x.array
    assert tn.Tensor(2, 3, device=device).device == x.device and not tn.Tensor(2, 3).numpy().any()


def test_graph_nodes_print_as_pytorchs():
    """``print(y.grad_fn)`` in PyTorch's autograd tutorial: the node's name and where it lives."""
    import re
    x = tn.ones(2, requires_grad=True)
    node = (x * 2).grad_fn
    assert re.fullmatch(r"<MulBackward0 object at 0x[0-9a-f]+>", repr(node)) and str(node) == repr(node)
    assert re.fullmatch(r"\(\(<AccumulateGrad object at 0x[0-9a-f]+>, 0\), \(None, 0\)\)", str(node.next_functions))
    theirs = (torch.ones(2, requires_grad=True) * 2).grad_fn
    assert re.sub("0x[0-9a-f]+", "", repr(node)) == re.sub("0x[0-9a-f]+", "", repr(theirs))
