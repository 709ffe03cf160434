"""Tests for tinynorm.optim: update rules (against plain numpy and torch.optim), parameter groups,
state dicts and checkpoint resume, and the learning-rate schedules."""
import math
import warnings

import numpy as np
import pytest

import tinynorm as tn
from tinynorm import io
from tinynorm.optim import SGD, Adam, AdamW, Optimizer, lr_scheduler
from tinynorm.optim.lr_scheduler import CosineAnnealingLR, LambdaLR, LinearWarmupCosine, StepLR

SHAPES = [(4, 3), (3,)]
STEPS = 20

SGD_CONFIGS = [
    dict(lr=0.1),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3),
    dict(lr=0.05, momentum=0.8, nesterov=True),
    dict(lr=0.1, momentum=0.5, weight_decay=0.1),
    dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01, maximize=True),
]
ADAM_CONFIGS = [
    dict(lr=0.01),
    dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6),
    dict(lr=0.01, weight_decay=0.1),
    dict(lr=0.01, amsgrad=True),
    dict(lr=0.01, amsgrad=True, weight_decay=0.05, maximize=True),
]
ADAMW_CONFIGS = [dict(lr=0.01), dict(lr=0.01, weight_decay=0.1, amsgrad=True)]
ALL_CONFIGS = ([(SGD, c) for c in SGD_CONFIGS] + [(Adam, c) for c in ADAM_CONFIGS]
               + [(AdamW, c) for c in ADAMW_CONFIGS])


def config_id(case):
    cls, config = case
    return cls.__name__ + "-" + "-".join(f"{k}={v}" for k, v in config.items())


def random_problem(dtype=np.float64, seed=0):
    """Initial values and a fixed sequence of random gradients (a lot of sign changes, unlike a
    smooth loss, so every term of each update rule matters)."""
    rng = np.random.default_rng(seed)
    initial = [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]
    grads = [[rng.standard_normal(shape).astype(dtype) for shape in SHAPES] for _ in range(STEPS)]
    return initial, grads


def run_tinynorm(cls, config, initial, grads):
    params = [tn.tensor(value, requires_grad=True) for value in initial]
    optimizer = cls(params, **config)
    trajectory = []
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = tn.tensor(g)
        optimizer.step()
        trajectory.append([p.numpy().copy() for p in params])
    return trajectory


# ------------------------------------------------------------------ references in plain numpy


def reference_sgd(initial, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                  maximize=False):
    params = [np.array(p, dtype=np.float64) for p in initial]
    velocity = [None] * len(params)
    trajectory = []
    for step_grads in grads:
        for i, g in enumerate(step_grads):
            g = -g if maximize else g.astype(np.float64)
            g = g + weight_decay * params[i]
            if momentum:
                velocity[i] = g.copy() if velocity[i] is None else momentum * velocity[i] + (1 - dampening) * g
                g = g + momentum * velocity[i] if nesterov else velocity[i]
            params[i] = params[i] - lr * g
        trajectory.append([p.copy() for p in params])
    return trajectory


def reference_adam(initial, grads, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
                   maximize=False, decoupled=False):
    """The paper's form: bias-corrected moments m_hat, v_hat; p -= lr * m_hat / (sqrt(v_hat) + eps)."""
    beta1, beta2 = betas
    params = [np.array(p, dtype=np.float64) for p in initial]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    v_max = [np.zeros_like(p) for p in params]
    trajectory = []
    for t, step_grads in enumerate(grads, start=1):
        for i, g in enumerate(step_grads):
            g = -g if maximize else g.astype(np.float64)
            if decoupled:
                params[i] = params[i] * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * params[i]
            m[i] = beta1 * m[i] + (1 - beta1) * g
            v[i] = beta2 * v[i] + (1 - beta2) * g**2
            v_max[i] = np.maximum(v_max[i], v[i])
            m_hat = m[i] / (1 - beta1**t)
            v_hat = (v_max[i] if amsgrad else v[i]) / (1 - beta2**t)
            params[i] = params[i] - lr * m_hat / (np.sqrt(v_hat) + eps)
        trajectory.append([p.copy() for p in params])
    return trajectory


def reference(cls, config, initial, grads):
    if cls is SGD:
        return reference_sgd(initial, grads, **config)
    if cls is AdamW:
        return reference_adam(initial, grads, **{"weight_decay": 1e-2, **config}, decoupled=True)
    return reference_adam(initial, grads, **config)


def assert_trajectories_close(actual, expected, rtol, atol):
    for step, (got_params, want_params) in enumerate(zip(actual, expected)):
        for got, want in zip(got_params, want_params):
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"step {step + 1}")


@pytest.mark.parametrize("case", ALL_CONFIGS, ids=config_id)
def test_trajectory_matches_numpy_reference(case):
    cls, config = case
    initial, grads = random_problem(np.float64)
    actual = run_tinynorm(cls, config, initial, grads)
    assert_trajectories_close(actual, reference(cls, config, initial, grads), rtol=1e-12, atol=1e-12)
    assert not np.allclose(actual[-1][0], initial[0])  # the parameters did move


@pytest.mark.parametrize("case", ALL_CONFIGS, ids=config_id)
def test_trajectory_matches_torch(case):
    torch = pytest.importorskip("torch")
    cls, config = case
    torch_cls = getattr(torch.optim, cls.__name__)
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 2e-5)):
        initial, grads = random_problem(dtype)
        params = [torch.tensor(value, requires_grad=True) for value in initial]
        optimizer = torch_cls(params, **config)
        expected = []
        for step_grads in grads:
            for p, g in zip(params, step_grads):
                p.grad = torch.tensor(g)
            optimizer.step()
            expected.append([p.detach().numpy().copy() for p in params])
        actual = run_tinynorm(cls, config, initial, grads)
        assert actual[-1][0].dtype == dtype
        assert_trajectories_close(actual, expected, rtol=tol, atol=tol)


def test_matches_torch_training_a_small_network():
    """Gradients from autograd, not given: a two-layer regression net trained by both frameworks."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((16, 5)), rng.standard_normal((16, 2))
    initial = [rng.standard_normal((5, 8)) * 0.5, rng.standard_normal((8, 2)) * 0.5]

    def train(lib, optimizer_cls, params):
        optimizer = optimizer_cls(params, lr=0.01, weight_decay=0.01, amsgrad=True)
        inputs, targets = lib.tensor(x), lib.tensor(y)
        for _ in range(STEPS):
            optimizer.zero_grad()
            loss = (((inputs @ params[0]).tanh() @ params[1] - targets) ** 2).mean()
            loss.backward()
            optimizer.step()
        return [p.detach().numpy() for p in params]

    ours = train(tn, AdamW, [tn.tensor(w, requires_grad=True) for w in initial])
    theirs = train(torch, torch.optim.AdamW, [torch.tensor(w, requires_grad=True) for w in initial])
    for got, want, start in zip(ours, theirs, initial):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
        assert np.abs(got - start).max() > 0.05


# ------------------------------------------------------------------------- update mechanics


@pytest.mark.parametrize("case", [(SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.1)),
                                  (Adam, dict(amsgrad=True)), (AdamW, {})], ids=config_id)
def test_updates_in_place_without_touching_the_gradient(case):
    cls, config = case
    p = tn.randn(3, 4, requires_grad=True)
    storage = p.array
    grad = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    p.grad = tn.tensor(grad.copy())
    optimizer = cls([p], **config)
    for _ in range(3):
        optimizer.step()
    assert p.array is storage  # modules keep a reference to this very array
    np.testing.assert_array_equal(p.grad.numpy(), grad)
    assert not p.requires_grad or p.grad_fn is None  # the update was not recorded
    for value in optimizer.state[p].values():
        if isinstance(value, tn.Tensor):
            assert value.dtype == np.float32 and value.shape == p.shape and not value.requires_grad


def test_parameters_without_gradient_are_skipped():
    a, b = tn.randn(3, requires_grad=True), tn.randn(3, requires_grad=True)
    before = b.numpy().copy()
    optimizer = Adam([a, b])
    a.grad = tn.ones(3)
    optimizer.step()
    np.testing.assert_array_equal(b.numpy(), before)
    assert b not in optimizer.state and optimizer.state[a]["step"] == 1


def test_param_groups_use_their_own_options():
    a, b = tn.zeros(2, requires_grad=True), tn.zeros(3, requires_grad=True)
    optimizer = SGD([{"params": [a]}, {"params": [b], "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert optimizer.param_groups[0]["momentum"] == 0 and optimizer.param_groups[1]["lr"] == 0.5
    for _ in range(2):
        a.grad, b.grad = tn.ones(2), tn.ones(3)
        optimizer.step()
    np.testing.assert_allclose(a.numpy(), -0.2, rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), -0.5 * (1 + 1.9), rtol=1e-6)  # buffer: 1, then 0.9 * 1 + 1
    assert "momentum_buffer" not in optimizer.state.get(a, {})


def test_add_param_group_fills_in_defaults():
    a, b = tn.zeros(2, requires_grad=True), tn.zeros(2, requires_grad=True)
    optimizer = Adam([a], lr=0.1, betas=(0.5, 0.6))
    optimizer.add_param_group({"params": b, "lr": 0.2})
    assert optimizer.param_groups[1]["lr"] == 0.2 and optimizer.param_groups[1]["betas"] == (0.5, 0.6)
    assert optimizer.param_groups[1]["params"] == [b]


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(set_to_none):
    p = tn.randn(3, requires_grad=True)
    (p * p).sum().backward()
    optimizer = SGD([p])
    optimizer.zero_grad(set_to_none=set_to_none)
    if set_to_none:
        assert p.grad is None
    else:
        np.testing.assert_array_equal(p.grad.numpy(), np.zeros(3))


def test_closure_is_called_with_grad_enabled():
    p = tn.tensor([1.0, 2.0], requires_grad=True)
    optimizer = SGD([p], lr=0.5)

    def closure():
        optimizer.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with tn.no_grad():
        loss = optimizer.step(closure)
    assert loss.item() == 5.0
    np.testing.assert_allclose(p.numpy(), [0.0, 0.0])


# ----------------------------------------------------------------------------------- errors


def test_frozen_parameters_are_accepted_and_left_alone():
    """As in PyTorch: a tensor that does not require grad may be listed; it has no grad, so it never moves."""
    frozen, trained = tn.ones(2), tn.ones(2, requires_grad=True)
    optimizer = SGD([frozen, trained], lr=0.5)
    (trained * 2).sum().backward()
    optimizer.step()
    np.testing.assert_array_equal(frozen.numpy(), [1, 1])
    np.testing.assert_array_equal(trained.numpy(), [0, 0])


def test_bad_parameter_lists_raise_clear_errors():
    p = tn.randn(2, requires_grad=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        SGD([])
    with pytest.raises(TypeError, match="got a Tensor"):
        SGD(p)
    with pytest.raises(ValueError, match="not a leaf"):
        SGD([p * 2])
    with pytest.raises(TypeError, match="ndarray"):
        SGD([np.zeros(2)])
    with pytest.raises(ValueError, match="more than once"):
        SGD([p, p])
    with pytest.raises(ValueError, match="more than once"):
        SGD([{"params": [p]}, {"params": [p]}])
    with pytest.raises(TypeError, match="got a set"):
        SGD({p})
    with pytest.raises(TypeError, match="not a set"):
        SGD([{"params": {p}}])


@pytest.mark.parametrize("make, message", [
    (lambda p: SGD(p, lr=-0.1), "lr: -0.1"),
    (lambda p: SGD(p, momentum=-1), "momentum: -1"),
    (lambda p: SGD(p, lr="fast"), "lr: 'fast'"),
    (lambda p: SGD(p, nesterov=True), "momentum > 0"),
    (lambda p: SGD(p, momentum=0.9, dampening=0.1, nesterov=True), "dampening == 0"),
    (lambda p: SGD([{"params": p, "lr": -1.0}], lr=0.1), "lr: -1.0"),
    (lambda p: Adam(p, betas=(0.9, 1.0)), r"betas: \(0.9, 1.0\)"),
    (lambda p: Adam(p, eps=-1e-8), "eps: -1e-08"),
    (lambda p: AdamW(p, weight_decay=-0.01), "weight_decay: -0.01"),
])
def test_invalid_options_name_the_value(make, message):
    with pytest.raises(ValueError, match=message):
        make([tn.randn(2, requires_grad=True)])


# ------------------------------------------------------------------------------- state dicts


def test_state_dict_layout_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(3), rng.standard_normal(2), rng.standard_normal(4)]
    ours = [tn.tensor(v, requires_grad=True) for v in values]
    theirs = [torch.tensor(v, requires_grad=True) for v in values]
    opt = Adam([{"params": ours[:2]}, {"params": ours[2:], "lr": 0.1}], amsgrad=True)
    torch_opt = torch.optim.Adam([{"params": theirs[:2]}, {"params": theirs[2:], "lr": 0.1}], amsgrad=True)
    for p, q, v in zip(ours[::2], theirs[::2], values[::2]):  # the middle parameter gets no gradient
        p.grad, q.grad = tn.tensor(v * 3), torch.tensor(v * 3)
    opt.step()
    torch_opt.step()
    sd, torch_sd = opt.state_dict(), torch_opt.state_dict()
    assert list(sd["state"]) == list(torch_sd["state"]) == [0, 2]
    assert [g["params"] for g in sd["param_groups"]] == [g["params"] for g in torch_sd["param_groups"]]
    for group, torch_group in zip(sd["param_groups"], torch_sd["param_groups"]):
        for name, value in group.items():
            assert value == torch_group[name], name
    for index in (0, 2):
        assert set(sd["state"][index]) == set(torch_sd["state"][index])
        assert sd["state"][index]["step"] == torch_sd["state"][index]["step"].item() == 1
        for name in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
            np.testing.assert_allclose(sd["state"][index][name].numpy(), torch_sd["state"][index][name].numpy(),
                                       rtol=1e-14)


def test_load_state_dict_copies_and_casts():
    p = tn.randn(3, requires_grad=True)
    optimizer = SGD([p], lr=0.1, momentum=0.9)
    p.grad = tn.ones(3)
    optimizer.step()
    saved = optimizer.state_dict()
    q = tn.randn(3, dtype=tn.float64, requires_grad=True)
    other = SGD([q], lr=0.5)
    other.load_state_dict(saved)
    assert other.param_groups[0]["lr"] == 0.1 and other.param_groups[0]["momentum"] == 0.9
    assert other.param_groups[0]["params"][0] is q
    buffer = other.state[q]["momentum_buffer"]
    assert buffer.dtype == np.float64
    np.testing.assert_array_equal(buffer.numpy(), np.ones(3))
    buffer.array += 1  # the loaded state must not alias the dict it came from
    np.testing.assert_array_equal(saved["state"][0]["momentum_buffer"].numpy(), np.ones(3))


def test_load_state_dict_rejects_a_mismatch():
    a, b = tn.randn(3, requires_grad=True), tn.randn(2, requires_grad=True)
    optimizer = Adam([a, b])
    a.grad, b.grad = tn.ones(3), tn.ones(2)
    optimizer.step()
    saved = optimizer.state_dict()
    with pytest.raises(ValueError, match="1 parameter groups.*2"):
        Adam([{"params": [a]}, {"params": [b]}]).load_state_dict(saved)
    with pytest.raises(ValueError, match="2 parameters in the state dict but 1"):
        Adam([a]).load_state_dict(saved)
    with pytest.raises(ValueError, match=r"shape \(3,\).*shape \(2,\)"):
        Adam([b, a]).load_state_dict(saved)
    with pytest.raises(ValueError, match="keys 'param_groups' and 'state'"):
        Adam([a, b]).load_state_dict({"state": {}})
    bad_lr = {**saved, "param_groups": [{**saved["param_groups"][0], "lr": -1.0}]}
    with pytest.raises(ValueError, match="lr: -1.0"):
        Adam([a, b]).load_state_dict(bad_lr)


@pytest.mark.parametrize("case", [(SGD, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3)),
                                  (Adam, dict(lr=0.01, amsgrad=True)), (AdamW, dict(lr=0.01))], ids=config_id)
def test_resume_from_checkpoint_is_bitwise_identical(case, tmp_path):
    """Train 20 steps in one go, or 8 steps + save + load into new objects + 12 steps: same bits."""
    cls, config = case
    rng = np.random.default_rng(5)
    x, y = tn.tensor(rng.standard_normal((32, 4))), tn.tensor(rng.standard_normal((32, 1)))
    start = rng.standard_normal((4, 1)).astype(np.float32)

    def fresh():
        w = tn.tensor(start, requires_grad=True)
        optimizer = cls([w], **config)
        return w, optimizer, LinearWarmupCosine(optimizer, warmup_steps=5, total_steps=STEPS)

    def train(w, optimizer, scheduler, steps):
        for _ in range(steps):
            optimizer.zero_grad()
            (((x @ w) - y) ** 2).mean().backward()
            optimizer.step()
            scheduler.step()

    w, optimizer, scheduler = fresh()
    train(w, optimizer, scheduler, STEPS)

    w1, optimizer1, scheduler1 = fresh()
    train(w1, optimizer1, scheduler1, 8)
    path = tmp_path / "checkpoint.npz"
    io.save({"w": w1, "optim": optimizer1.state_dict(), "sched": scheduler1.state_dict()}, path)
    checkpoint = io.load(path)
    w2, optimizer2, scheduler2 = fresh()
    with tn.no_grad():
        w2.copy_(checkpoint["w"])
    optimizer2.load_state_dict(checkpoint["optim"])
    scheduler2.load_state_dict(checkpoint["sched"])
    train(w2, optimizer2, scheduler2, STEPS - 8)

    assert w2.numpy().tobytes() == w.numpy().tobytes()
    assert scheduler2.get_last_lr() == scheduler.get_last_lr()
    for name, value in optimizer.state[w].items():
        resumed = optimizer2.state[w2][name]
        assert (resumed.numpy().tobytes() == value.numpy().tobytes()) if isinstance(value, tn.Tensor) \
            else resumed == value


# ------------------------------------------------------------------------------- schedulers


def lr_sequence(scheduler, steps):
    lrs = [scheduler.get_last_lr()]
    for _ in range(steps):
        scheduler.optimizer.step()
        scheduler.step()
        lrs.append(scheduler.get_last_lr())
    return lrs


def two_group_sgd():
    a, b = tn.zeros(1, requires_grad=True), tn.zeros(1, requires_grad=True)
    return SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)


# name -> (make the scheduler from a module holding the scheduler classes, closed form or None).
# tinynorm's schedulers have PyTorch's names, so one factory builds either framework's.
SCHEDULES = {
    "LambdaLR": (lambda s, o: s.LambdaLR(o, lambda t: 0.95**t),
                 lambda base, t: base * 0.95**t),
    "LambdaLR-per-group": (lambda s, o: s.LambdaLR(o, [lambda t: 1 / (t + 1), lambda t: t % 3]),
                           None),
    "StepLR": (lambda s, o: s.StepLR(o, step_size=4, gamma=0.5),
               lambda base, t: base * 0.5 ** (t // 4)),
    "CosineAnnealingLR": (lambda s, o: s.CosineAnnealingLR(o, T_max=10, eta_min=0.01),
                          lambda base, t: 0.01 + (base - 0.01) * (1 + math.cos(math.pi * t / 10)) / 2),
}


@pytest.mark.parametrize("name", [n for n, (_, formula) in SCHEDULES.items() if formula])
def test_schedules_follow_their_closed_form(name):
    make, formula = SCHEDULES[name]
    optimizer = two_group_sgd()
    lrs = lr_sequence(make(lr_scheduler, optimizer), 25)
    for t, step_lrs in enumerate(lrs):
        np.testing.assert_allclose(step_lrs, [formula(0.1, t), formula(0.5, t)], rtol=1e-13, atol=1e-15)
    assert [g["lr"] for g in optimizer.param_groups] == lrs[-1]


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedules_match_torch(name):
    torch = pytest.importorskip("torch")
    make, _ = SCHEDULES[name]
    a, b = torch.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)
    torch_optimizer = torch.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns about steps without gradients
        theirs = lr_sequence(make(torch.optim.lr_scheduler, torch_optimizer), 25)
    ours = lr_sequence(make(lr_scheduler, two_group_sgd()), 25)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


def test_linear_warmup_cosine_shape():
    optimizer = two_group_sgd()
    lrs = np.array(lr_sequence(LinearWarmupCosine(optimizer, warmup_steps=10, total_steps=50, min_lr=0.001), 60))
    for column, base in enumerate((0.1, 0.5)):
        lr = lrs[:, column]
        np.testing.assert_allclose(lr[:11], base * np.arange(11) / 10, rtol=1e-14)  # 0 up to base
        assert np.all(np.diff(lr[10:51]) < 0)  # then strictly down...
        np.testing.assert_allclose(lr[30], (base + 0.001) / 2, rtol=1e-14)  # ...through the midpoint...
        np.testing.assert_allclose(lr[50:], 0.001, rtol=1e-14)  # ...to min_lr, and stays there


def test_scheduler_state_dict_round_trip():
    optimizer = two_group_sgd()
    scheduler = StepLR(optimizer, step_size=3, gamma=0.5)
    lr_sequence(scheduler, 4)
    state = scheduler.state_dict()
    assert state == {"base_lrs": [0.1, 0.5], "last_epoch": 4, "_last_lr": [0.05, 0.25], "step_size": 3,
                     "gamma": 0.5}
    resumed = StepLR(two_group_sgd(), step_size=3, gamma=0.5)
    resumed.load_state_dict(state)
    assert lr_sequence(resumed, 5) == lr_sequence(scheduler, 5)
    lambda_state = LambdaLR(two_group_sgd(), lambda t: 1.0).state_dict()
    assert "lr_lambdas" not in lambda_state and "optimizer" not in lambda_state
    with pytest.raises(ValueError, match="expected keys"):
        resumed.load_state_dict(lambda_state)


def test_scheduler_errors():
    optimizer = two_group_sgd()
    with pytest.raises(ValueError, match="step_size must be a positive int, got 0"):
        StepLR(optimizer, step_size=0)
    with pytest.raises(ValueError, match="T_max must be a positive int, got 2.5"):
        CosineAnnealingLR(optimizer, T_max=2.5)
    with pytest.raises(ValueError, match="total_steps must be an int > warmup_steps"):
        LinearWarmupCosine(optimizer, warmup_steps=10, total_steps=10)
    with pytest.raises(ValueError, match="list of 2 functions"):
        LambdaLR(optimizer, [lambda t: 1.0])
    with pytest.raises(ValueError, match="no 'initial_lr'"):
        StepLR(two_group_sgd(), step_size=2, last_epoch=5)
    with pytest.raises(TypeError, match="expected an Optimizer"):
        StepLR([tn.zeros(1)], step_size=2)


def test_optimizer_base_class_needs_an_update_rule():
    with pytest.raises(NotImplementedError):
        p = tn.zeros(1, requires_grad=True)
        p.grad = tn.ones(1)
        Optimizer([p], {"lr": 0.1}).step()
