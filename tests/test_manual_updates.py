"""The update idioms of PyTorch's tutorials train as they do in PyTorch: ``p -= lr * p.grad`` under
``no_grad`` on tensors and on a module's parameters (``Learning PyTorch with Examples``), ``.data``
updates, and ``param.grad = None``/``zero_grad()``, from the same initial values."""
import math

import numpy as np
import pytest

import tinynorm as tn

torch = pytest.importorskip("torch")


def polynomial_fit(lib, steps: int = 300) -> list[float]:
    """Fit a + b x + c x^2 + d x^3 to sin(x) by hand-written gradient descent."""
    grid = np.linspace(-math.pi, math.pi, 2000, dtype=np.float32)
    x, y = lib.tensor(grid), lib.tensor(np.sin(grid))
    a, b, c, d = (lib.tensor(v, requires_grad=True) for v in (0.1, -0.2, 0.3, 0.05))
    losses = []
    for _ in range(steps):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with lib.no_grad():
            for p in (a, b, c, d):
                p -= 1e-6 * p.grad
                p.grad = None
    return losses


def module_fit(lib, steps: int = 200) -> list[float]:
    """The same with ``nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))`` and ``model.parameters()``."""
    x = lib.tensor(np.linspace(-math.pi, math.pi, 500, dtype=np.float32))
    features = lib.stack([x, x ** 2, x ** 3], dim=1) if lib is tn else x.unsqueeze(-1).pow(lib.tensor([1, 2, 3]))
    y = lib.tensor(np.sin(np.linspace(-math.pi, math.pi, 500)).astype(np.float32))
    model = lib.nn.Sequential(lib.nn.Linear(3, 1), lib.nn.Flatten(0, 1))
    with lib.no_grad():
        model[0].weight.copy_(lib.tensor([[0.1, -0.05, 0.02]]))
        model[0].bias.copy_(lib.tensor([0.3]))
    losses = []
    for _ in range(steps):
        loss = ((model(features) - y) ** 2).sum()
        losses.append(loss.item())
        model.zero_grad()
        loss.backward()
        with lib.no_grad():
            for param in model.parameters():
                param -= 1e-5 * param.grad
    return losses


@pytest.mark.parametrize("fit", [polynomial_fit, module_fit])
def test_manual_gradient_descent_trains_as_in_pytorch(fit):
    ours, theirs = fit(tn), fit(torch)
    assert ours[-1] < 0.5 * ours[0]  # it trains (a silently skipped update keeps the loss constant)
    np.testing.assert_allclose(ours, theirs, rtol=2e-4)


def test_data_updates_and_identity():
    w = tn.nn.Parameter(tn.tensor([1.0, 2.0]))
    alias = w
    (w * w).sum().backward()
    w.data -= 0.5 * w.grad.data
    assert alias is w and w.requires_grad and w.is_leaf
    np.testing.assert_allclose(w.numpy(), [0.0, 0.0])
