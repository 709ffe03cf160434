"""Order statistics and NaN-aware reductions against PyTorch: median (all elements, along a dim as
``(values, indices)``), cummax/cummin, quantile (numbers and tensors of levels, every interpolation), nansum, nanmean,
aminmax and diff: values, dtypes, indices, gradients with a random upstream gradient, NaN rows,
errors, and float64 finite differences.

Each test takes a ``device``; ``tests/cuda/sim_api_ops.py`` runs them on 'cuda' in the simulator.
"""
import numpy as np
import pytest
from api_compare import check

import tinynorm as tn
from tinynorm.autograd import gradcheck

NAN = float("nan")
X = [[1.5, -2.5, 3.25, 0.75], [0.5, 2.0, -1.75, 4.5], [9.0, -3.0, 0.25, 1.0]]
WITH_NAN = [[1.5, NAN, 3.25, 0.75], [0.5, 2.0, -1.75, 4.5], [NAN, -3.0, NAN, 1.0]]
INTS = [[3, -7, 0, 2], [2, 5, -4, 5], [1, 1, 8, -2]]


@pytest.fixture(params=["cpu"])
def device(request):
    return request.param


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_median_along_a_dim(dim, keepdim, device):
    check(lambda lib, make: lib.median(make(X, requires_grad=True), dim, keepdim), device)
    check(lambda lib, make: make(WITH_NAN, requires_grad=True).median(dim=dim, keepdim=keepdim), device)
    check(lambda lib, make: make(INTS).median(dim, keepdim=keepdim).values, device)


def test_median_of_all_elements(device):
    check(lambda lib, make: (lib.median(make(X, requires_grad=True)), make(INTS).median(), make(WITH_NAN).median(),
                             make([]).median(), make(2.5).median(), make(2.5).median(0)), device)
    check(lambda lib, make: [lib.median(make(X), 1)[k] for k in (0, 1)] + list(lib.median(make(X), 0)), device)
    for bad in (lambda lib, make: lib.median(make([[]]), 1), lambda lib, make: lib.median(make(X), 2)):
        check(bad, device)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(interpolation, device):
    check(lambda lib, make: lib.quantile(make(X, requires_grad=True), 0.3, interpolation=interpolation), device)
    check(lambda lib, make: make(X, requires_grad=True).quantile(make([0.0, 0.25, 0.5, 0.9, 1.0]), dim=1,
                                                               interpolation=interpolation), device)
    check(lambda lib, make: lib.quantile(make(WITH_NAN, requires_grad=True), make([0.1, 0.5]), dim=0, keepdim=True,
                                         interpolation=interpolation), device)


def test_quantile_shapes_and_errors(device):
    check(lambda lib, make: (lib.quantile(make(X), make([0.2, 0.8]), keepdim=True), lib.quantile(make(X), 0.5, 1, True),
                             lib.quantile(make(X), make(0.5), dim=0), lib.quantile(make(3.0), 0.5, dim=0),
                             lib.quantile(make([1.0, 2.0, 4.0], dtype="float64"), 0.125)), device)
    for bad in (lambda lib, make: lib.quantile(make(INTS), 0.5), lambda lib, make: lib.quantile(make(X), 1.5),
                lambda lib, make: lib.quantile(make(X), make([[0.5]])), lambda lib, make: lib.quantile(make([]), 0.5),
                lambda lib, make: lib.quantile(make(X), 0.5, interpolation="cubic")):
        check(bad, device)


def test_nansum_and_nanmean(device):
    check(lambda lib, make: (lib.nansum(make(WITH_NAN, requires_grad=True)),
                             make(WITH_NAN, requires_grad=True).nansum(1),
                             lib.nanmean(make(WITH_NAN, requires_grad=True), 0, keepdim=True), make(INTS).nansum(),
                             lib.nanmean(make([[NAN, NAN], [1.0, NAN]]), 1), lib.nansum(make(X), dim=(0, 1))), device)
    check(lambda lib, make: lib.nanmean(make(INTS)), device)


def test_aminmax(device):
    check(lambda lib, make: (lib.aminmax(make(X)), make(X).aminmax(dim=1), lib.aminmax(make(INTS), dim=0, keepdim=True),
                             lib.aminmax(make(X), keepdim=True), lib.aminmax(make(X), dim=1).max), device)
    check(lambda lib, make: lib.aminmax(make([])), device)


def test_diff(device):
    check(lambda lib, make: (lib.diff(make(X, requires_grad=True)), make(X, requires_grad=True).diff(n=2, dim=0),
                             lib.diff(make(INTS), n=3), lib.diff(make([True, False, False, True])),
                             lib.diff(make([1.0, 2.0]), n=3), lib.diff(make(X), n=0)), device)
    check(lambda lib, make: lib.diff(make(X, requires_grad=True), dim=1, prepend=make([[0.0]] * 3, requires_grad=True),
                                     append=make([[1.0, 2.0]] * 3)), device)
    for bad in (lambda lib, make: lib.diff(make(1.0)), lambda lib, make: lib.diff(make(X), n=-1),
                lambda lib, make: lib.diff(make(X), prepend=2.0)):
        check(bad, device)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_running_extremes(name, device):
    ties = [[1.0, 3.0, 2.0, 3.0, 0.5, 3.0, -1.0, 4.0, 4.0]]
    check(lambda lib, make: (getattr(lib, name)(make(X, requires_grad=True), 1),
                             getattr(make(WITH_NAN, requires_grad=True), name)(0),
                             getattr(lib, name)(make(ties, requires_grad=True), -1), getattr(lib, name)(make(INTS), 1),
                             getattr(lib, name)(make([True, False, True, True]), 0), getattr(lib, name)(make(2.5), 0),
                             getattr(lib, name)(make([[]]), 1)), device)
    check(lambda lib, make: getattr(lib, name)(make(X), 2), device)


def test_repr_of_the_named_pairs():
    assert repr(tn.median(tn.tensor(X), 1)).startswith("tinynorm.return_types.median(\nvalues=tensor(")
    assert repr(tn.aminmax(tn.tensor(X))) == "tinynorm.return_types.aminmax(\nmin=tensor(-3.),\nmax=tensor(9.))"


# ------------------------------------------------------------------------------ finite differences
def _leaf(values):
    return tn.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def test_order_statistics_pass_gradcheck():
    assert gradcheck(lambda x: tn.median(x, 1).values, _leaf(X))
    assert gradcheck(lambda x: tn.cummax(x, 1).values, _leaf(X))
    assert gradcheck(lambda x: tn.cummin(x, 0).values, _leaf(X))
    assert gradcheck(lambda x: tn.median(x), _leaf(X))
    assert gradcheck(lambda x: tn.quantile(x, tn.tensor([0.2, 0.5, 0.9], dtype=tn.float64), dim=0), _leaf(X))


def test_nan_reductions_and_diff_pass_gradcheck():
    assert gradcheck(lambda x: tn.nanmean(x, 1), _leaf(X))
    assert gradcheck(lambda x, y: tn.diff(x, n=2, dim=1, prepend=y), (_leaf(X), _leaf([[0.5]] * 3)))
