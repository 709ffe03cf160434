"""Optimizer state dicts: PyTorch's layout, loading a torch.optim state dict as it is and stepping on
as torch does, bitwise resume through a checkpoint file, and loads that fail before changing anything
(another optimizer's state, a missing buffer, a fractional step, a wrong shape...)."""
import copy

import numpy as np
import pytest

import tinynorm as tn
from tinynorm import io, optim
from tinynorm.optim import SGD, Adam, AdamW
from tinynorm.optim.lr_scheduler import LinearWarmupCosine

# every optimizer, with options that make it keep every buffer it has
FULL = {
    "SGD": dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
    "Adam": dict(lr=0.01, amsgrad=True),
    "AdamW": dict(lr=0.01),
    "RMSprop": dict(lr=0.01, momentum=0.9, centered=True),
    "Adagrad": dict(lr=0.1, lr_decay=0.01),
    "Adadelta": dict(weight_decay=0.01),
    "Adamax": dict(lr=0.01),
    "NAdam": dict(lr=0.01),
    "RAdam": dict(lr=0.01, betas=(0.5, 0.9)),
}
SHAPES = [(3,), (2,), (4,)]


def problem(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in SHAPES], [[rng.standard_normal(s) for s in SHAPES] for _ in range(20)]


def two_group_optimizer(lib, name, params):
    return getattr(lib.optim, name)([{"params": params[:2]}, {"params": params[2:], "lr": 0.02}], **FULL[name])


def steps(lib, optimizer, params, grads, skip_middle=False):
    for step_grads in grads:
        for index, (p, g) in enumerate(zip(params, step_grads)):
            p.grad = None if skip_middle and index == 1 else lib.tensor(g)
        optimizer.step()


@pytest.mark.parametrize("name", list(FULL))
def test_state_dict_layout_matches_torch(name):
    torch = pytest.importorskip("torch")
    initial, grads = problem()
    ours_params = [tn.tensor(v, requires_grad=True) for v in initial]
    theirs_params = [torch.tensor(v, requires_grad=True) for v in initial]
    ours, theirs = two_group_optimizer(tn, name, ours_params), two_group_optimizer(torch, name, theirs_params)
    steps(tn, ours, ours_params, grads[:3], skip_middle=True)  # the middle parameter gets no gradient
    steps(torch, theirs, theirs_params, grads[:3], skip_middle=True)
    sd, torch_sd = ours.state_dict(), theirs.state_dict()
    assert list(sd["state"]) == list(torch_sd["state"])
    assert sd["param_groups"] == torch_sd["param_groups"]
    for index, state in sd["state"].items():
        torch_state = torch_sd["state"][index]
        assert set(state) == set(torch_state)
        for key, value in state.items():
            want = torch_state[key].detach().numpy()
            got = value.numpy() if isinstance(value, tn.Tensor) else np.float64(value)
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=key)


@pytest.mark.parametrize("name", list(FULL))
def test_a_torch_state_dict_loads_as_it_is_and_steps_on_as_torch(name):
    """10 steps in PyTorch; its state dict (torch tensors, a float32 step) loads into tinynorm, and both
    take 10 more steps: the same parameters."""
    torch = pytest.importorskip("torch")
    initial, grads = problem(1)
    theirs_params = [torch.tensor(v, requires_grad=True) for v in initial]
    theirs = two_group_optimizer(torch, name, theirs_params)
    steps(torch, theirs, theirs_params, grads[:10])
    ours_params = [tn.tensor(p.detach().numpy().copy(), requires_grad=True) for p in theirs_params]
    ours = two_group_optimizer(tn, name, ours_params)
    ours.load_state_dict(theirs.state_dict())
    assert all(isinstance(state["step"], int) for state in ours.state.values() if "step" in state)
    steps(torch, theirs, theirs_params, grads[10:])
    steps(tn, ours, ours_params, grads[10:])
    for got, want in zip(ours_params, theirs_params):
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(FULL))
def test_resume_from_checkpoint_is_bitwise_identical(name, tmp_path):
    """Train 20 steps in one go, or 8 steps + save + load into new objects + 12 steps: same bits."""
    rng = np.random.default_rng(5)
    x, y = (tn.tensor(rng.standard_normal(shape), dtype=tn.float32) for shape in ((32, 4), (32, 1)))
    start = rng.standard_normal((4, 1)).astype(np.float32)

    def fresh():
        w = tn.tensor(start, requires_grad=True)
        optimizer = getattr(optim, name)([w], **FULL[name])
        return w, optimizer, LinearWarmupCosine(optimizer, warmup_steps=5, total_steps=20)

    def train(w, optimizer, scheduler, count):
        for _ in range(count):
            optimizer.zero_grad()
            (((x @ w) - y) ** 2).mean().backward()
            optimizer.step()
            scheduler.step()

    w, optimizer, scheduler = fresh()
    train(w, optimizer, scheduler, 20)

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
    train(w2, optimizer2, scheduler2, 12)

    assert w2.numpy().tobytes() == w.numpy().tobytes()
    assert scheduler2.get_last_lr() == scheduler.get_last_lr()
    for key, value in optimizer.state[w].items():
        resumed = optimizer2.state[w2][key]
        assert (resumed.numpy().tobytes() == value.numpy().tobytes()) if isinstance(value, tn.Tensor) \
            else resumed == value


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


def test_adamw_keeps_decoupled_weight_decay_when_loading():
    p = tn.zeros(2, requires_grad=True)
    saved = Adam([p]).state_dict()
    optimizer = AdamW([tn.zeros(2, requires_grad=True)])
    optimizer.load_state_dict(saved)
    assert optimizer.param_groups[0]["decoupled_weight_decay"] is True


def test_missing_options_take_the_defaults():
    """A state dict saved without some options (an older checkpoint) loads, with the defaults for those."""
    p = tn.zeros(2, requires_grad=True)
    saved = SGD([p], lr=0.3).state_dict()
    del saved["param_groups"][0]["foreach"], saved["param_groups"][0]["maximize"]
    optimizer = SGD([tn.zeros(2, requires_grad=True)])
    optimizer.load_state_dict(saved)
    assert optimizer.param_groups[0]["lr"] == 0.3 and optimizer.param_groups[0]["maximize"] is False


# ------------------------------------------------------------------- failed loads change nothing


def trained_adam():
    a, b = tn.randn(3, requires_grad=True), tn.randn(2, requires_grad=True)
    optimizer = Adam([a, b], lr=0.01)
    a.grad, b.grad = tn.ones(3), tn.ones(2)
    optimizer.step()
    return optimizer


def snapshot(optimizer):
    """A deep copy of everything an optimizer holds, to compare after a failed load."""
    state = {id(p): {k: (v.numpy().copy() if isinstance(v, tn.Tensor) else v) for k, v in s.items()}
             for p, s in optimizer.state.items()}
    groups = [{k: (list(map(id, v)) if k == "params" else copy.deepcopy(v)) for k, v in g.items()}
              for g in optimizer.param_groups]
    return state, groups


def assert_unchanged(optimizer, before):
    state, groups = snapshot(optimizer)
    assert groups == before[1]
    assert state.keys() == before[0].keys()
    for key, values in state.items():
        for name, value in values.items():
            np.testing.assert_array_equal(value, before[0][key][name])


def with_state(saved, index, **changes):
    """``saved`` with state ``index`` changed: a value per name, or None to delete the name."""
    result = {"state": {k: dict(v) for k, v in saved["state"].items()}, "param_groups": saved["param_groups"]}
    for name, value in changes.items():
        if value is None:
            del result["state"][index][name]
        else:
            result["state"][index][name] = value
    return result


def sgd_state_for(optimizer):
    params = [p for g in optimizer.param_groups for p in g["params"]]
    sgd = SGD([tn.zeros(p.shape, requires_grad=True) for p in params], momentum=0.9)
    for p in sgd.param_groups[0]["params"]:
        p.grad = tn.ones(p.shape)
    sgd.step()
    return {"state": sgd.state_dict()["state"], "param_groups": optimizer.state_dict()["param_groups"]}


BAD_LOADS = [
    ("a state without exp_avg", lambda sd, o: with_state(sd, 1, exp_avg=None), ValueError,
     r"state\[1\] has no 'exp_avg' \(Adam keeps 'step', 'exp_avg', 'exp_avg_sq', 'max_exp_avg_sq' \(optional\) "
     "per parameter"),
    ("SGD's state", lambda sd, o: sgd_state_for(o), ValueError,
     r"state\[0\] has 'momentum_buffer', which Adam does not keep.*another optimizer's state"),
    ("a fractional step", lambda sd, o: with_state(sd, 1, step=1.5), ValueError,
     r"state\[1\]\['step'\] must be a step count \(an int >= 0\), got 1.5"),
    ("a negative step", lambda sd, o: with_state(sd, 1, step=-2), ValueError, r"\['step'\] must be a step count"),
    ("a step that is a string", lambda sd, o: with_state(sd, 1, step="3"), TypeError,
     r"\['step'\] must be a step count \(an int >= 0\), got str"),
    ("a step that is NaN", lambda sd, o: with_state(sd, 1, step=float("nan")), ValueError, "got nan"),
    ("a buffer of the wrong shape", lambda sd, o: with_state(sd, 1, exp_avg_sq=tn.zeros(3)), ValueError,
     r"state\[1\]\['exp_avg_sq'\] has shape \(3,\), but its parameter has shape \(2,\)"),
    ("an integer buffer", lambda sd, o: with_state(sd, 1, exp_avg=tn.tensor([1, 2])), TypeError,
     r"\['exp_avg'\] must be a floating tensor.*int64"),
    ("a list for a buffer", lambda sd, o: with_state(sd, 1, exp_avg=[0.0, 0.0]), TypeError,
     r"\['exp_avg'\] must be a floating tensor of the parameter's shape, got list"),
    ("a state that is not a dict", lambda sd, o: {**sd, "state": {0: sd["state"][0], 1: 3}}, TypeError,
     r"state\[1\] must be a dict, got int"),
    ("a state for an unknown parameter", lambda sd, o: {**sd, "state": {**sd["state"], 7: {}}}, ValueError,
     "state of parameter 7, which no parameter group lists"),
    ("a bad lr", lambda sd, o: {**sd, "param_groups": [{**sd["param_groups"][0], "lr": -1.0}]}, ValueError,
     r"param_groups\[0\]: Invalid learning rate: -1.0"),
    ("betas that are a string", lambda sd, o: {**sd, "param_groups": [{**sd["param_groups"][0], "betas": "x"}]},
     TypeError, "betas must be a pair"),
    ("amsgrad without its buffer", lambda sd, o: {**sd, "param_groups": [{**sd["param_groups"][0], "amsgrad": True}]},
     ValueError, r"has no 'max_exp_avg_sq'"),
    ("None", lambda sd, o: None, ValueError, "expected a dict with keys 'param_groups' and 'state', got NoneType"),
    ("a model's state dict", lambda sd, o: {"weight": tn.zeros(2)}, ValueError, r"got \['weight'\]"),
    ("param_groups that are not a list", lambda sd, o: {**sd, "param_groups": 5}, TypeError,
     "'param_groups' must be a list of dicts"),
    ("one group too many", lambda sd, o: {**sd, "param_groups": sd["param_groups"] * 2}, ValueError,
     "2 parameter groups, this optimizer has 1"),
]


@pytest.mark.parametrize("make, error, message", [case[1:] for case in BAD_LOADS], ids=[c[0] for c in BAD_LOADS])
def test_a_failed_load_names_the_key_and_changes_nothing(make, error, message):
    optimizer = trained_adam()
    before = snapshot(optimizer)
    bad = make(optimizer.state_dict(), optimizer)
    with pytest.raises(error, match=message):
        optimizer.load_state_dict(bad)
    assert_unchanged(optimizer, before)
    a, b = optimizer.param_groups[0]["params"]
    a.grad, b.grad = tn.ones(3), tn.ones(2)
    optimizer.step()  # and it still works
    assert optimizer.state[a]["step"] == 2


def test_a_mismatched_optimizer_is_refused():
    optimizer = trained_adam()
    saved = optimizer.state_dict()
    a, b = optimizer.param_groups[0]["params"]
    with pytest.raises(ValueError, match="1 parameter groups.*2"):
        Adam([{"params": [a]}, {"params": [b]}]).load_state_dict(saved)
    with pytest.raises(ValueError, match="2 parameters in the state dict but 1"):
        Adam([a]).load_state_dict(saved)
    with pytest.raises(ValueError, match=r"shape \(3,\).*shape \(2,\)"):
        Adam([b, a]).load_state_dict(saved)


def test_sgd_refuses_adams_state_and_takes_a_none_buffer_as_none():
    p = tn.zeros(3, requires_grad=True)
    sgd = SGD([p], momentum=0.9)
    with pytest.raises(ValueError, match=r"has 'step', which SGD does not keep \(it keeps 'momentum_buffer' "
                                         r"\(optional\)\)"):
        sgd.load_state_dict({"state": {0: {"step": 1}}, "param_groups": sgd.state_dict()["param_groups"]})
    sgd.load_state_dict({"state": {0: {"momentum_buffer": None}}, "param_groups": sgd.state_dict()["param_groups"]})
    assert sgd.state_dict()["state"] == {}
    p.grad = tn.ones(3)
    sgd.step()
    np.testing.assert_array_equal(sgd.state[p]["momentum_buffer"].numpy(), np.ones(3))
