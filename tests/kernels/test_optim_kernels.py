"""The CPU optimizer steps (``kernels/cpu/optim.py``): the compiled loops give the numpy forms' values to the
bit, for every option, on one thread and on several, special values included; the cases the loops
cannot compute the same way (float16, strided arrays, numpy scalars as options, a gradient sharing
memory with the state) take the numpy forms; and the trajectories of both match PyTorch's."""
from __future__ import annotations

import itertools
import pickle

import numba
import numpy as np
import pytest

from helpers import assert_same_values
from tinynorm.kernels.cpu import _config, optim

# The references, kept before any test replaces them in the module.
SGD_NUMPY, ADAM_NUMPY = optim.sgd_step_numpy, optim.adam_step_numpy

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 5e-324, 3.0e38, -3.0e38])
SGD_OPTIONS = [dict(momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                    maximize=maximize, first_step=first_step)
               for momentum, dampening, weight_decay, nesterov, maximize, first_step in itertools.product(
                   (0, 0.9), (0, 0.3), (0, 0.1), (False, True), (False, True), (False, True))
               if not (nesterov and (momentum == 0 or dampening != 0))]
ADAM_OPTIONS = [dict(weight_decay=weight_decay, decoupled_weight_decay=decoupled, amsgrad=amsgrad, maximize=maximize)
                for weight_decay, decoupled, amsgrad, maximize in itertools.product(
                    (0, 0.1), (False, True), (False, True), (False, True))]


def arrays(count: int, size: int, dtype: type, seed: int, specials: bool = True) -> list[np.ndarray]:
    """``count`` random arrays of ``size`` values (state-like ones non-negative are not needed: the rules
    take any value), with the special values sprinkled in."""
    rng = np.random.default_rng(seed)
    result = []
    for _ in range(count):
        values = rng.standard_normal(size) * 10.0 ** rng.integers(-3, 4, size)
        if specials:
            values[rng.integers(0, size, size // 5 + 1)] = rng.choice(SPECIALS, size // 5 + 1)
        result.append(values.astype(dtype))
    return result


def sgd_both(param, grad, buffer, lr=0.05, **options):
    """The SGD step by the loop and by the numpy form, on copies; the arrays after each."""
    results = []
    for update in ("loop", "numpy"):
        p, g, b = param.copy(), grad.copy(), None if buffer is None else buffer.copy()
        if update == "loop":
            optim.sgd_update([p], [g], None if b is None else [b], lr=lr, **options)
        else:
            with np.errstate(all="ignore"):  # the loops compute the same values without numpy's warnings
                SGD_NUMPY(p, g, b, lr=lr, **options)
        results.append([p, g] + ([] if b is None else [b]))
    return results


def adam_both(param, grad, exp_avg, exp_avg_sq, maximum, amsgrad, step=3, lr=1e-3, eps=1e-8, **options):
    results = []
    for update in ("loop", "numpy"):
        p, g, m, v, mx = (a.copy() for a in (param, grad, exp_avg, exp_avg_sq, maximum))
        mx = mx if amsgrad else None
        settings = dict(step=step, lr=lr, beta1=0.9, beta2=0.999, eps=eps, **options)
        if update == "loop":
            optim.adam_update([p], [g], [m], [v], None if mx is None else [mx], **settings)
        else:
            with np.errstate(all="ignore"):
                ADAM_NUMPY(p, g, m, v, mx, **settings)
        results.append([p, g, m, v] + ([] if mx is None else [mx]))
    return results


def assert_all_same(results):
    loop, numpy_form = results
    for actual, expected in zip(loop, numpy_form, strict=True):
        assert_same_values(actual, expected, nan_signs=False)


@pytest.fixture
def loops_only(monkeypatch):
    """Make the numpy forms fail, so that a passing call proves the loop did the step."""
    def refuse(*args, **kwargs):
        raise AssertionError("the numpy form ran")

    monkeypatch.setattr(optim, "sgd_step_numpy", refuse)
    monkeypatch.setattr(optim, "adam_step_numpy", refuse)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("options", SGD_OPTIONS, ids=str)
def test_sgd_loop_is_the_numpy_form_to_the_bit(dtype, options):
    param, grad, buffer = arrays(3, 257, dtype, seed=len(str(options)))
    assert_all_same(sgd_both(param, grad, buffer if options["momentum"] else None, **options))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("options", ADAM_OPTIONS, ids=str)
def test_adam_loop_is_the_numpy_form_to_the_bit(dtype, options):
    param, grad, exp_avg = arrays(3, 257, dtype, seed=len(str(options)))
    exp_avg_sq, maximum = (np.abs(a) for a in arrays(2, 257, dtype, seed=7))
    exp_avg_sq[::11], maximum[::7] = -0.0, -0.0  # np.maximum's ties (+0 against -0) keep the second
    options = dict(options)
    amsgrad = options.pop("amsgrad")
    assert_all_same(adam_both(param, grad, exp_avg, exp_avg_sq, maximum, amsgrad, **options))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_with_zero_eps_divides_as_numpy_does(dtype):
    """eps=0 on zero moments: 0/0 is NaN, and x/0 infinite, where Numba's default error model would raise."""
    param = np.array([1.0, 2.0, -3.0], dtype)
    zero = np.zeros(3, dtype)
    results = adam_both(param, np.array([0.0, 1e-30, -0.0], dtype), zero, zero, zero, amsgrad=False, eps=0.0,
                        weight_decay=0, decoupled_weight_decay=False, maximize=False)
    assert_all_same(results)
    assert np.isnan(results[0][0][0])


@pytest.mark.parametrize("threads", [1, 2])
def test_large_parameters_are_shared_out_with_the_same_values(threads, loops_only):
    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("one CPU")
    size = _config.PARALLEL_THRESHOLD + 7
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        assert optim._chunks(size) == threads
        param, grad, state = arrays(3, size, np.float32, seed=threads)
        sgd = sgd_both(param, grad, state, momentum=0.9, dampening=0, weight_decay=0.1, nesterov=True,
                       maximize=False, first_step=False)
        adam = adam_both(param, grad, state, np.abs(state), np.abs(grad), amsgrad=True, weight_decay=0.1,
                         decoupled_weight_decay=True, maximize=True)
    finally:
        numba.set_num_threads(previous)
    assert_all_same(sgd)
    assert_all_same(adam)


def test_state_lists_may_hold_none_for_some_parameters(loops_only):
    """A None momentum buffer or amsgrad maximum among arrays: that parameter's step goes without it."""
    (first, second, grad, buffer, exp_avg), exp_avg_sq = arrays(5, 40, np.float32, seed=9), np.ones(40, np.float32)
    results = []
    for update in ("loop", "numpy"):
        p, q, b, m, v, m2, v2, mx = (a.copy() for a in (first, second, buffer, exp_avg, exp_avg_sq, exp_avg,
                                                         exp_avg_sq, exp_avg_sq))
        sgd = dict(lr=0.1, momentum=0.9, dampening=0, weight_decay=0, nesterov=False, maximize=False,
                   first_step=False)
        adam = dict(step=2, lr=0.01, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                    maximize=False)
        if update == "loop":
            optim.sgd_update([p, q], [grad, grad], [b, None], **sgd)
            optim.adam_update([p, q], [grad, grad], [m, m2], [v, v2], [None, mx], **adam)
        else:
            with np.errstate(all="ignore"):
                SGD_NUMPY(p, grad, b, **sgd)
                SGD_NUMPY(q, grad, None, **sgd)
                ADAM_NUMPY(p, grad, m, v, None, **adam)
                ADAM_NUMPY(q, grad, m2, v2, mx, **adam)
        results.append([p, q, b, m, v, m2, v2, mx])
    assert_all_same(results)


def test_an_unpickled_dtype_takes_the_loop(loops_only):
    """Arrays that come back from a pickle carry an equal dtype that is another object."""
    param, grad = (pickle.loads(pickle.dumps(a)) for a in arrays(2, 30, np.float64, seed=4, specials=False))
    if param.dtype is np.dtype(np.float64):
        pytest.skip("this numpy restores the dtype object itself")
    expected = param.copy()
    SGD_NUMPY(expected, grad, None, lr=0.1, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False,
              first_step=False)
    optim.sgd_update([param], [grad], None, lr=0.1, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                     maximize=False, first_step=False)
    assert_same_values(param, expected)


def test_every_parameter_of_a_list_is_updated_by_the_loop(loops_only):
    params = [np.ones(shape, np.float32) for shape in [(3, 4), (5,), (2, 1, 3, 3), ()]]
    grads = [np.full(p.shape, 2.0, np.float32) for p in params]
    optim.sgd_update(params, grads, None, lr=0.25, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                     maximize=False, first_step=False)
    assert all(np.array_equal(p, np.full(p.shape, 0.5, np.float32)) for p in params)


def _strided(shape):
    return np.ones(shape[::-1], np.float32).T  # Fortran order


def _aliased(start, stop):
    """A parameter, and a gradient that is its memory from ``start`` to ``stop`` shifted by one."""
    memory = np.arange(1.0, 14.0, dtype=np.float32)
    return memory[:12], memory[start:stop]


# Each builds fresh (param, grad, buffer) arrays the loop would not treat as numpy does.
NOT_FOR_THE_LOOP = {
    "float16": lambda: (np.arange(12, dtype=np.float16), np.ones(12, np.float16), np.ones(12, np.float16)),
    "strided param": lambda: (_strided((3, 4)) * 2, np.ones((3, 4), np.float32), np.ones((3, 4), np.float32)),
    "strided grad": lambda: (np.full((3, 4), 2.0, np.float32), _strided((3, 4)), np.ones((3, 4), np.float32)),
}
OVERLAPPING = {
    "grad is the param": lambda: (lambda p: (p, p, np.ones(12, np.float32)))(np.arange(12.0, dtype=np.float32)),
    "grad overlaps the param": lambda: (*_aliased(1, 13), np.ones(12, np.float32)),
    "grad overlaps the buffer": lambda: (lambda memory: (np.ones(12, np.float32), memory[1:13], memory[:12]))(
        np.arange(13.0, dtype=np.float32)),
    "buffer is the param": lambda: (lambda p: (p, np.ones(12, np.float32), p))(np.arange(12.0, dtype=np.float32)),
}
SGD = dict(lr=0.1, momentum=0.9, dampening=0, weight_decay=0.1, nesterov=False, maximize=False, first_step=False)


@pytest.mark.parametrize("name", list(NOT_FOR_THE_LOOP) + list(OVERLAPPING))
def test_arrays_the_loop_cannot_take_get_the_numpy_forms_values(name, monkeypatch):
    make = {**NOT_FOR_THE_LOOP, **OVERLAPPING}[name]
    expected_param, expected_grad, expected_buffer = make()
    SGD_NUMPY(expected_param, expected_grad, expected_buffer, **SGD)
    answers = []
    loop = optim._sgd
    monkeypatch.setattr(optim, "_sgd", lambda *args: answers.append(loop(*args)) or answers[-1])
    param, grad, buffer = make()
    optim.sgd_update([param], [grad], [buffer], **SGD)
    # The loop is not asked, or it is and finds the overlap before it changes anything.
    assert answers == ([False] if name in OVERLAPPING else [])
    assert_same_values(param, expected_param)
    assert_same_values(buffer, expected_buffer)


def test_numpy_scalars_as_options_take_the_numpy_form(monkeypatch):
    """An np.float64 learning rate makes numpy compute a float32 step in float64: the numpy form does."""
    monkeypatch.setattr(optim, "_adam", lambda *args: pytest.fail("the loop ran"))
    monkeypatch.setattr(optim, "_sgd", lambda *args: pytest.fail("the loop ran"))
    param, grad, state = arrays(3, 50, np.float32, seed=3, specials=False)
    expected = param.copy()
    optim.sgd_step_numpy(expected, grad, None, lr=np.float64(0.1), momentum=0, dampening=0, weight_decay=0,
                         nesterov=False, maximize=False, first_step=False)
    optim.sgd_update([param], [grad], None, lr=np.float64(0.1), momentum=0, dampening=0, weight_decay=0,
                     nesterov=False, maximize=False, first_step=False)
    assert_same_values(param, expected)
    optim.adam_update([param], [grad], [state], [np.abs(state)], None, step=1, lr=1e-3, beta1=np.float32(0.9),
                      beta2=0.999, eps=1e-8, weight_decay=0, decoupled_weight_decay=False, maximize=False)


def test_a_read_only_state_gets_numpys_error():
    param, grad = arrays(2, 10, np.float32, seed=1)
    buffer = np.zeros(10, np.float32)
    buffer.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        optim.sgd_update([param], [grad], [buffer], lr=0.1, momentum=0.9, dampening=0, weight_decay=0,
                         nesterov=False, maximize=False, first_step=False)


@pytest.mark.parametrize("name, options", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
                                           ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.05)),
                                           ("AdamW", dict(lr=0.01, weight_decay=0.1))])
def test_float32_trajectories_match_torch(name, options, loops_only):
    """Large enough for the parallel path; 20 steps of random gradients, within float32 rounding of PyTorch."""
    torch = pytest.importorskip("torch")
    import tinynorm

    rng = np.random.default_rng(5)
    shapes = [(_config.PARALLEL_THRESHOLD + 3,), (7, 5)]
    initial = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    grads = [[rng.standard_normal(shape).astype(np.float32) for shape in shapes] for _ in range(20)]
    results = []
    for lib in (tinynorm, torch):
        params = [lib.tensor(value, requires_grad=True) for value in initial]
        optimizer = getattr(lib.optim, name)(params, **options)
        for step_grads in grads:
            for p, g in zip(params, step_grads):
                p.grad = lib.tensor(g)
            optimizer.step()
        results.append([p.detach().numpy() for p in params])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=2e-6)
