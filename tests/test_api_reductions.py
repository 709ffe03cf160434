"""Reductions, running sums and sorting against PyTorch: max/min in all three forms, prod, var/std with
``unbiased``/``correction``, numpy's ``axis``/``keepdims``, any/all, count_nonzero, logsumexp, cumsum,
cumprod, sort, argsort, topk, unique, bincount, var_mean/std_mean, sum/mean with ``dtype``, softmax and
log_softmax (values, dtypes, gradients, errors), and float64
finite-difference checks of the new differentiable ops.
"""
import numpy as np
import pytest
from api_compare import check

import tinynorm as tn
from tinynorm.autograd import gradcheck

X = [[1.5, -2.5, 3.25, 0.5], [0.75, 2.0, -1.75, 4.5], [-3.0, 0.25, 1.0, -0.5]]
WITH_ZEROS = [[1.5, 0.0, 3.25, 0.5], [0.0, 2.0, 0.0, 4.5], [-3.0, 0.25, 1.0, -0.5]]
INTS = [[3, -7, 0, 2], [2, 5, -4, 1]]
TIES = [[1.0, 3.0, 3.0, -2.0], [0.5, 0.5, 0.5, 0.5]]


@pytest.fixture(params=["cpu"])
def device(request):
    return request.param


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_of_everything(name, device):
    check(lambda lib, make: getattr(lib, name)(make(X, requires_grad=True)), device)
    check(lambda lib, make: getattr(make(INTS), name)(), device)
    check(lambda lib, make: getattr(lib, name)(make(TIES, requires_grad=True)), device)
    check(lambda lib, make: getattr(lib, name)(make([], dtype="float32")), device)


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dim, keepdim", [(0, False), (1, True), (-1, False)])
def test_max_min_along_a_dim(name, dim, keepdim, device):
    check(lambda lib, make: getattr(lib, name)(make(X, requires_grad=True), dim, keepdim), device)
    check(lambda lib, make: getattr(make(X, requires_grad=True), name)(dim=dim, keepdim=keepdim), device)
    check(lambda lib, make: getattr(make(X, requires_grad=True), name)(axis=dim, keepdims=keepdim), device)
    check(lambda lib, make: getattr(lib, name)(make(INTS), dim).indices, device)

    def unpacked(lib, make):
        values, indices = getattr(lib, name)(make(X), dim)
        return values, indices

    check(unpacked, device)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_of_two_tensors_and_bad_dims(name, device):
    other = [[0.5, 1.0, 3.0, 2.0], [1.0, 1.5, -2.0, 5.0], [-1.0, 0.0, 2.0, -1.5]]
    check(lambda lib, make: getattr(lib, name)(make(X, requires_grad=True), make(other, requires_grad=True)), device)
    check(lambda lib, make: getattr(lib, name)(make(X), 2), device)
    check(lambda lib, make: getattr(lib, name)(make(X), 1.0), device)
    check(lambda lib, make: getattr(lib, name)(make([[]], dtype="float32"), 0), device)


def test_max_along_a_dim_of_a_0d_tensor(device):
    check(lambda lib, make: lib.max(make(2.5), 0), device)
    check(lambda lib, make: lib.argmax(make(2.5), 0, keepdim=True), device)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin_accept_numpy_names(name, device):
    check(lambda lib, make: getattr(lib, name)(make(X), axis=0, keepdims=True), device)
    check(lambda lib, make: getattr(make(X), name)(dim=1), device)
    check(lambda lib, make: getattr(lib, name)(make(X), keepdim=True), device)
    check(lambda lib, make: getattr(lib, name)(make(INTS)), device)


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "logsumexp", "any", "all", "count_nonzero",
                                  "std", "var", "prod"])
def test_every_reduction_accepts_axis_and_keepdims(name, device):
    def case(lib, make):
        x = make(X, requires_grad=name not in ("any", "all", "count_nonzero"))
        if name == "count_nonzero":
            return getattr(lib, name)(x, axis=1)
        return getattr(lib, name)(x, axis=1, keepdims=True), getattr(x, name)(axis=0)

    check(case, device)


def test_prod(device):
    check(lambda lib, make: lib.prod(make(X, requires_grad=True)), device)
    check(lambda lib, make: lib.prod(make(X, requires_grad=True), 1, keepdim=True), device)
    check(lambda lib, make: make(WITH_ZEROS, requires_grad=True).prod(0), device)
    check(lambda lib, make: make(WITH_ZEROS, requires_grad=True).prod(), device)
    check(lambda lib, make: lib.prod(make([[1.5, 0.0], [0.0, 2.0]], requires_grad=True)), device)
    check(lambda lib, make: (lib.prod(make(INTS), 1), lib.prod(make([True, True])), lib.prod(make(INTS, "int32"))),
          device)
    check(lambda lib, make: lib.prod(make(INTS), dtype=lib.float64), device)
    check(lambda lib, make: lib.prod(make([[]], dtype="float32"), 1), device)
    check(lambda lib, make: lib.prod(make(X), 2), device)


def test_var_and_std_take_unbiased_or_correction(device):
    for name in ("var", "std"):
        check(lambda lib, make: getattr(lib, name)(make(X, requires_grad=True)), device)
        check(lambda lib, make: getattr(make(X, requires_grad=True), name)(unbiased=False), device)
        check(lambda lib, make: getattr(lib, name)(make(X, requires_grad=True), 1, False), device)
        check(lambda lib, make: getattr(lib, name)(make(X, requires_grad=True), 1, True, True), device)
        check(lambda lib, make: getattr(lib, name)(make(X, requires_grad=True), False), device)
        check(lambda lib, make: getattr(lib, name)(make(X, requires_grad=True), dim=(0, 1), correction=2), device)
        check(lambda lib, make: getattr(make(X, requires_grad=True), name)(0, keepdim=True, correction=0), device)
        check(lambda lib, make: getattr(lib, name)(make(INTS)), device)


def test_var_refuses_unbiased_and_correction_together(device):
    check(lambda lib, make: lib.std(make(X), unbiased=False, correction=0), device)


def test_var_mean_and_std_mean(device):
    check(lambda lib, make: lib.var_mean(make(X, requires_grad=True), 1), device)
    check(lambda lib, make: lib.std_mean(make(X, requires_grad=True), dim=0, correction=0, keepdim=True), device)
    check(lambda lib, make: lib.var_mean(make(X, requires_grad=True), False), device)
    check(lambda lib, make: lib.std_mean(make(X), (0, 1), True, True), device)
    check(lambda lib, make: lib.var_mean(make(INTS), 1), device)


def test_sum_and_mean_take_a_dtype(device):
    check(lambda lib, make: make(X, requires_grad=True).sum(dtype=lib.float64), device)
    check(lambda lib, make: lib.sum(make(X), 1, dtype=lib.int32), device)
    check(lambda lib, make: (make([200, 100], dtype="uint8").sum(), make([True, True]).sum(0),
                             make([100, 100], dtype="int8").sum(dtype=lib.int8)), device)
    check(lambda lib, make: make(INTS).mean(1, dtype=lib.float64), device)
    check(lambda lib, make: make(X, requires_grad=True).mean(dim=0, keepdim=True, dtype=lib.float64), device)
    check(lambda lib, make: make(X).mean(dtype=lib.int64), device)
    check(lambda lib, make: make(INTS).mean(), device)


def test_max_min_take_other_by_name(device):
    for name in ("max", "min"):
        check(lambda lib, make: getattr(lib, name)(make(X, requires_grad=True), other=make(WITH_ZEROS)), device)


def test_softmax_and_log_softmax(device):
    for name in ("softmax", "log_softmax"):
        check(lambda lib, make: getattr(lib, name)(make(X, requires_grad=True), 1), device)
        check(lambda lib, make: getattr(make(X, requires_grad=True), name)(0, dtype=lib.float64), device)
        check(lambda lib, make: getattr(lib, name)(make(INTS), -1, lib.float32), device)
        check(lambda lib, make: getattr(lib, name)(make(INTS), -1), device)
        check(lambda lib, make: getattr(lib, name)(make(X, dtype="float16", requires_grad=True), 1), device,
              rtol=2e-3, atol=2e-3)
        check(lambda lib, make: getattr(lib, name)(make(X)), device)
        check(lambda lib, make: getattr(lib, name)(make(X), 2), device)


def test_any_and_all(device):
    for name in ("any", "all"):
        check(lambda lib, make: getattr(lib, name)(make(X)), device)
        check(lambda lib, make: getattr(lib, name)(make(WITH_ZEROS), 1), device)
        check(lambda lib, make: getattr(make(INTS), name)(dim=(0, 1), keepdim=True), device)
        check(lambda lib, make: getattr(lib, name)(make([3, 0], dtype="uint8")), device)
        check(lambda lib, make: getattr(lib, name)(make([True, False]), 0), device)
        check(lambda lib, make: getattr(lib, name)(make([[]], dtype="float32"), 1), device)


def test_any_result_works_in_an_if(device):
    check(lambda lib, make: bool(make(WITH_ZEROS).any()) and not bool(make(WITH_ZEROS).all()), device)


def test_count_nonzero(device):
    check(lambda lib, make: lib.count_nonzero(make(WITH_ZEROS)), device)
    check(lambda lib, make: lib.count_nonzero(make(WITH_ZEROS), dim=(0, 1)), device)
    check(lambda lib, make: make(INTS).count_nonzero(0), device)


def test_logsumexp(device):
    check(lambda lib, make: lib.logsumexp(make(X, requires_grad=True), 1), device)
    check(lambda lib, make: lib.logsumexp(make(X, requires_grad=True), (0, 1), keepdim=True), device)
    check(lambda lib, make: make(X, dtype="float64", requires_grad=True).logsumexp(dim=0), device)
    check(lambda lib, make: lib.logsumexp(make([[1000.0, 1000.0], [-1000.0, -999.0]], requires_grad=True), 1), device)
    check(lambda lib, make: lib.logsumexp(make([-float("inf"), -float("inf")]), 0), device)
    check(lambda lib, make: lib.logsumexp(make([float("inf"), 1.0]), 0), device)
    check(lambda lib, make: lib.logsumexp(make(INTS), 0), device)
    check(lambda lib, make: lib.logsumexp(make(X)), device)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_running_sums_and_products(name, device):
    check(lambda lib, make: getattr(lib, name)(make(X, requires_grad=True), 1), device)
    check(lambda lib, make: getattr(make(X, requires_grad=True), name)(dim=0), device)
    check(lambda lib, make: getattr(lib, name)(make(WITH_ZEROS, requires_grad=True), -1), device)
    check(lambda lib, make: getattr(lib, name)(make(WITH_ZEROS, requires_grad=True), 0), device)
    check(lambda lib, make: getattr(lib, name)(make(INTS, dtype="int32"), 1), device)
    check(lambda lib, make: getattr(lib, name)(make([[True, False, True]]), 1), device)
    check(lambda lib, make: getattr(lib, name)(make(INTS), 0, dtype=lib.float64), device)
    check(lambda lib, make: getattr(lib, name)(make(2.5, requires_grad=True), 0), device)
    check(lambda lib, make: getattr(lib, name)(make(X), 2), device)

    def in_place(lib, make):
        h = make(X, requires_grad=True) * 1.0
        return getattr(h, name + "_")(1)

    check(in_place, device)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort(descending, device):
    check(lambda lib, make: lib.sort(make(X, requires_grad=True), 1, descending), device)
    check(lambda lib, make: make(X, requires_grad=True).sort(dim=0, descending=descending), device)
    check(lambda lib, make: lib.sort(make(TIES, requires_grad=True), descending=descending, stable=True), device)
    check(lambda lib, make: lib.sort(make([2.0, float("nan"), 1.0, float("nan"), -1.0]), descending=descending),
          device)
    check(lambda lib, make: lib.sort(make(INTS), 0, descending), device)
    check(lambda lib, make: lib.sort(make([True, False, True]), descending=descending), device)
    check(lambda lib, make: lib.argsort(make(TIES), dim=1, descending=descending, stable=True), device)
    check(lambda lib, make: make(X).argsort(descending=descending), device)
    check(lambda lib, make: lib.sort(make(3.5)), device)
    check(lambda lib, make: lib.sort(make(X), dim=2), device)


@pytest.mark.parametrize("largest", [True, False])
def test_topk(largest, device):
    check(lambda lib, make: lib.topk(make(X, requires_grad=True), 2, largest=largest), device)
    check(lambda lib, make: make(X, requires_grad=True).topk(3, dim=0, largest=largest), device)
    check(lambda lib, make: lib.topk(make(INTS), 4, 1, largest), device)
    check(lambda lib, make: lib.topk(make(X), 0), device)
    check(lambda lib, make: lib.topk(make(X), 5), device)
    check(lambda lib, make: lib.topk(make(X), -1), device)


def test_topk_unsorted_gives_the_same_elements(device):
    def case(lib, make):
        values, indices = lib.topk(make(X), 2, sorted=False)
        return lib.sort(values).values, lib.sort(indices).values

    check(case, device)


def test_unique(device):
    values = [3, 1, 2, 3, 1, 7]
    check(lambda lib, make: lib.unique(make(values)), device)
    check(lambda lib, make: lib.unique(make(values), return_inverse=True, return_counts=True), device)
    check(lambda lib, make: make([[3.5, 1.0], [1.0, -2.0]]).unique(return_inverse=True), device)
    check(lambda lib, make: lib.unique(make([[1, 2], [1, 2], [0, 1]]), dim=0, return_inverse=True,
                                       return_counts=True), device)
    check(lambda lib, make: lib.unique(make([[3, 1, 3], [2, 0, 2]]), dim=1, return_counts=True), device)
    check(lambda lib, make: lib.unique(make(4)), device)
    check(lambda lib, make: lib.unique(make([True, False, True])), device)


def test_bincount(device):
    check(lambda lib, make: lib.bincount(make([0, 1, 1, 3, 1])), device)
    check(lambda lib, make: lib.bincount(make([0, 1, 1, 3]), minlength=6), device)
    check(lambda lib, make: lib.bincount(make([0, 1, 1, 3]), weights=make([0.5, 1.0, 2.0, 4.0])), device)
    check(lambda lib, make: lib.bincount(make([0, 1, 1]), weights=make([1.0, 2.0, 3.0], dtype="float64")), device)
    check(lambda lib, make: lib.bincount(make([0, 2]), weights=make([1, 2])), device)
    check(lambda lib, make: make([2, 2, 0], dtype="int32").bincount(), device)
    check(lambda lib, make: lib.bincount(make([], dtype="int64"), minlength=3), device)


def test_bincount_refuses_bad_input(device):
    for case in (lambda lib, make: lib.bincount(make([-1, 2])), lambda lib, make: lib.bincount(make([[1]])),
                 lambda lib, make: lib.bincount(make([1.0])), lambda lib, make: lib.bincount(make([True])),
                 lambda lib, make: lib.bincount(make([1]), minlength=-1),
                 lambda lib, make: lib.bincount(make([1, 2]), weights=make([1.0]))):
        check(case, device)


# ------------------------------------------------------------------------------ finite differences
def _leaf(values):
    return tn.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


@pytest.mark.parametrize("values", [X, WITH_ZEROS, [[0.0, 0.0, 1.5], [2.0, -1.0, 0.5], [1.0, 1.0, 1.0]]])
def test_prod_and_cumprod_pass_gradcheck_with_and_without_zeros(values):
    x = _leaf(values)
    assert gradcheck(lambda t: t.prod(), x)
    assert gradcheck(lambda t: t.prod(0), x)
    assert gradcheck(lambda t: t.prod(1, keepdim=True), x)
    assert gradcheck(lambda t: t.cumprod(0), x)
    assert gradcheck(lambda t: t.cumprod(1), x)


def test_cumsum_logsumexp_and_sorting_pass_gradcheck():
    x = _leaf(X)
    assert gradcheck(lambda t: t.cumsum(1), x)
    assert gradcheck(lambda t: t.logsumexp((0, 1)), x)
    assert gradcheck(lambda t: t.logsumexp(1, keepdim=True), x)
    assert gradcheck(lambda t: t.sort(0, descending=True).values, x)
    assert gradcheck(lambda t: t.topk(2).values, x)
    assert gradcheck(lambda t: t.max(1).values, x)
