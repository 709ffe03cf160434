"""The update rules of tinynorm.optim: 20-step trajectories against torch.optim for every optimizer and
option, in float64 (to rounding) and float32, against independent numpy references for SGD and Adam,
per-group options, and a small network trained by both frameworks."""
import numpy as np
import pytest

import tinynorm as tn
from tinynorm import optim
from tinynorm.optim import SGD, Adam, AdamW

SHAPES = [(4, 3), (3,)]
STEPS = 20
TOLERANCE = {np.float64: 1e-12, np.float32: 5e-5}

CONFIGS = {
    "SGD": [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.05, momentum=0.9, dampening=0.3),
            dict(lr=0.05, momentum=0.8, nesterov=True), dict(lr=0.1, momentum=0.5, weight_decay=0.1),
            dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01, maximize=True, foreach=True)],
    "Adam": [dict(lr=0.01), dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6), dict(lr=0.01, weight_decay=0.1),
             dict(lr=0.01, amsgrad=True), dict(lr=0.01, amsgrad=True, weight_decay=0.05, maximize=True, fused=False),
             dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)],
    "AdamW": [dict(lr=0.01), dict(lr=0.01, weight_decay=0.1, amsgrad=True, maximize=True)],
    "RMSprop": [dict(lr=0.01), dict(lr=0.01, momentum=0.9), dict(lr=0.01, centered=True, weight_decay=0.1),
                dict(lr=0.01, centered=True, momentum=0.5, alpha=0.9, maximize=True, eps=1e-6)],
    "Adagrad": [dict(lr=0.1), dict(lr=0.1, lr_decay=0.1, weight_decay=0.1),
                dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-6, maximize=True)],
    "Adadelta": [dict(), dict(lr=0.5, rho=0.5, weight_decay=0.1), dict(eps=1e-4, maximize=True)],
    "Adamax": [dict(), dict(lr=0.01, betas=(0.5, 0.9), weight_decay=0.1), dict(eps=1e-3, maximize=True)],
    "NAdam": [dict(), dict(lr=0.01, momentum_decay=0.01, weight_decay=0.1),
              dict(lr=0.01, decoupled_weight_decay=True, weight_decay=0.1, maximize=True)],
    # beta2=0.9 lets the rectified branch (rho_t > 5) start at step 6; the default 0.999 starts it at 7
    "RAdam": [dict(), dict(lr=0.01, weight_decay=0.1),
              dict(lr=0.01, betas=(0.5, 0.9), decoupled_weight_decay=True, weight_decay=0.1, maximize=True)],
}
CASES = [(name, config) for name, configs in CONFIGS.items() for config in configs]


def case_id(case):
    name, config = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in config.items())


def random_problem(dtype=np.float64, seed=0):
    """Initial values and a fixed sequence of random gradients (a lot of sign changes, unlike a
    smooth loss, so every term of each update rule matters)."""
    rng = np.random.default_rng(seed)
    initial = [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]
    grads = [[rng.standard_normal(shape).astype(dtype) for shape in SHAPES] for _ in range(STEPS)]
    return initial, grads


def trajectory(lib, name, config, initial, grads):
    """The parameters after each step, optimizing with ``lib.optim.<name>`` (tinynorm or torch)."""
    params = [lib.tensor(value, requires_grad=True) for value in initial]
    optimizer = getattr(lib.optim, name)(params, **config)
    steps = []
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = lib.tensor(g)
        optimizer.step()
        steps.append([p.detach().numpy().copy() for p in params])
    return steps


def assert_trajectories_close(actual, expected, tolerance):
    for step, (got_params, want_params) in enumerate(zip(actual, expected)):
        for got, want in zip(got_params, want_params):
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance, err_msg=f"step {step + 1}")


@pytest.mark.parametrize("case", CASES, ids=case_id)
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_trajectory_matches_torch(case, dtype):
    torch = pytest.importorskip("torch")
    name, config = case
    initial, grads = random_problem(dtype)
    actual = trajectory(tn, name, config, initial, grads)
    assert_trajectories_close(actual, trajectory(torch, name, config, initial, grads), TOLERANCE[dtype])
    assert np.abs(actual[-1][0] - initial[0]).max() > 1e-3  # the parameters did move


def test_per_group_options_match_torch():
    """Two groups with different options (one centered with momentum, one plain) in one optimizer."""
    torch = pytest.importorskip("torch")
    initial, grads = random_problem()

    def run(lib):
        params = [lib.tensor(value, requires_grad=True) for value in initial]
        optimizer = lib.optim.RMSprop([{"params": params[:1], "centered": True, "momentum": 0.9},
                                       {"params": params[1:], "lr": 0.05}], lr=0.01, weight_decay=0.01)
        for step_grads in grads:
            for p, g in zip(params, step_grads):
                p.grad = lib.tensor(g)
            optimizer.step()
        return [p.detach().numpy() for p in params]

    for got, want in zip(run(tn), run(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ references in plain numpy


def reference_sgd(initial, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                  maximize=False, **_):
    params = [np.array(p, dtype=np.float64) for p in initial]
    velocity = [None] * len(params)
    steps = []
    for step_grads in grads:
        for i, g in enumerate(step_grads):
            g = -g if maximize else g.astype(np.float64)
            g = g + weight_decay * params[i]
            if momentum:
                velocity[i] = g.copy() if velocity[i] is None else momentum * velocity[i] + (1 - dampening) * g
                g = g + momentum * velocity[i] if nesterov else velocity[i]
            params[i] = params[i] - lr * g
        steps.append([p.copy() for p in params])
    return steps


def reference_adam(initial, grads, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
                   maximize=False, decoupled_weight_decay=False, **_):
    """The paper's form: bias-corrected moments m_hat, v_hat; p -= lr * m_hat / (sqrt(v_hat) + eps)."""
    beta1, beta2 = betas
    params = [np.array(p, dtype=np.float64) for p in initial]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    v_max = [np.zeros_like(p) for p in params]
    steps = []
    for t, step_grads in enumerate(grads, start=1):
        for i, g in enumerate(step_grads):
            g = -g if maximize else g.astype(np.float64)
            if decoupled_weight_decay:
                params[i] = params[i] * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * params[i]
            m[i] = beta1 * m[i] + (1 - beta1) * g
            v[i] = beta2 * v[i] + (1 - beta2) * g**2
            v_max[i] = np.maximum(v_max[i], v[i])
            m_hat = m[i] / (1 - beta1**t)
            v_hat = (v_max[i] if amsgrad else v[i]) / (1 - beta2**t)
            params[i] = params[i] - lr * m_hat / (np.sqrt(v_hat) + eps)
        steps.append([p.copy() for p in params])
    return steps


def reference(name, config, initial, grads):
    if name == "SGD":
        return reference_sgd(initial, grads, **config)
    if name == "AdamW":
        return reference_adam(initial, grads, **{"weight_decay": 1e-2, **config}, decoupled_weight_decay=True)
    return reference_adam(initial, grads, **config)


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in ("SGD", "Adam", "AdamW")], ids=case_id)
def test_sgd_and_adam_match_numpy_references(case):
    name, config = case
    initial, grads = random_problem(np.float64)
    actual = trajectory(tn, name, config, initial, grads)
    assert_trajectories_close(actual, reference(name, config, initial, grads), 1e-12)


def test_matches_torch_training_a_small_network():
    """Gradients from autograd, not given: a two-layer regression net trained by both frameworks."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((16, 5)), rng.standard_normal((16, 2))
    initial = [rng.standard_normal((5, 8)) * 0.5, rng.standard_normal((8, 2)) * 0.5]

    def train(lib, params):
        optimizer = lib.optim.AdamW(params, lr=0.01, weight_decay=0.01, amsgrad=True)
        inputs, targets = lib.tensor(x), lib.tensor(y)
        for _ in range(STEPS):
            optimizer.zero_grad()
            loss = (((inputs @ params[0]).tanh() @ params[1] - targets) ** 2).mean()
            loss.backward()
            optimizer.step()
        return [p.detach().numpy() for p in params]

    ours = train(tn, [tn.tensor(w, requires_grad=True) for w in initial])
    theirs = train(torch, [torch.tensor(w, requires_grad=True) for w in initial])
    for got, want, start in zip(ours, theirs, initial):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
        assert np.abs(got - start).max() > 0.05


@pytest.mark.parametrize("name", [n for n in CONFIGS if n not in ("SGD", "Adam", "AdamW")])
def test_every_optimizer_trains_a_regression(name):
    """Without PyTorch: each rule brings a least-squares loss down by 10x in 100 steps."""
    rng = np.random.default_rng(4)
    x = tn.tensor(rng.standard_normal((64, 4)), dtype=tn.float32)
    y = x @ tn.tensor(rng.standard_normal((4, 1)), dtype=tn.float32)
    w = tn.zeros(4, 1, requires_grad=True)
    optimizer = getattr(optim, name)([w], lr={"Adagrad": 0.5, "Adadelta": 10.0}.get(name, 0.05))

    def loss():
        return (((x @ w) - y) ** 2).mean()

    start = loss().item()
    for _ in range(100):
        optimizer.zero_grad()
        loss().backward()
        optimizer.step()
    assert loss().item() < start / 10


def test_all_optimizers_are_exported():
    for name in CONFIGS:
        assert issubclass(getattr(optim, name), optim.Optimizer)
    assert SGD and Adam and AdamW  # imported by name, as user code does
