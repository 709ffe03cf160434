"""Gradients at the points where the textbook formula is undefined (0 ** 0, log 0, |x| at 0, ties,
zero spread) take PyTorch's values: each case against PyTorch, with a random upstream gradient."""
import numpy as np
import pytest

import tinynorm as tn

torch = pytest.importorskip("torch")

X = [0.0, 0.0, 1.5, -2.0]
CASES = {
    "x ** 0": lambda L, x: x ** 0,
    "x ** 0.0": lambda L, x: x ** 0.0,
    "x ** 2": lambda L, x: x ** 2,
    "x ** 0.5 at 0": lambda L, x: x.abs() ** 0.5,
    "0.0 ** x": lambda L, x: 0.0 ** x,
    "2.0 ** x": lambda L, x: 2.0 ** x,
    "x ** x": lambda L, x: x.abs() ** x,
    "x ** tensor 0": lambda L, x: x ** L.zeros(4, dtype=L.float64),
    "sqrt": lambda L, x: x.abs().sqrt(),
    "log": lambda L, x: x.abs().log(),
    "abs": lambda L, x: x.abs(),
    "relu": lambda L, x: x.relu(),
    "clamp at the bound": lambda L, x: x.clamp(0.0, 1.5),
    "maximum tie": lambda L, x: L.maximum(x, L.zeros(4, dtype=L.float64)),
    "minimum tie": lambda L, x: L.minimum(x, L.zeros(4, dtype=L.float64)),
    "amax tie": lambda L, x: x.reshape(2, 2).amax(1),
    "std of equal values": lambda L, x: x[:2].std(),
    "std of one value": lambda L, x: x[:1].std(),
    "var of one value": lambda L, x: x[:1].var(),
    "var correction 3": lambda L, x: x[:2].var(correction=3),
    "mean": lambda L, x: x.mean(),
}


@pytest.mark.parametrize("name", CASES)
def test_gradient_at_a_singular_point_is_pytorchs(name):
    upstream = np.random.default_rng(0).standard_normal(4)
    results = []
    for lib in (tn, torch):
        x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
        with np.errstate(all="ignore"):
            y = CASES[name](lib, x)
            v = lib.tensor(upstream[: int(np.prod(y.shape))].reshape(tuple(y.shape)), dtype=lib.float64)
            y.backward(v)
        results.append((np.asarray(y.detach().numpy(), dtype=float), x.grad.numpy().astype(float)))
    (ours_y, ours_grad), (torch_y, torch_grad) = results
    np.testing.assert_allclose(ours_y, torch_y, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(ours_grad, torch_grad, rtol=1e-12, equal_nan=True)
