"""Learning-rate schedulers against torch.optim.lr_scheduler: every schedule alone, compositions (two
schedulers on one optimizer, ChainedScheduler, SequentialLR, an lr changed by hand between steps),
the deprecated step(epoch), resuming with last_epoch and through state dicts; and their errors.

Each case builds the same schedule in both frameworks (tinynorm's schedulers have PyTorch's names, so
one factory builds either) over a two-group optimizer, steps both, and compares every group's lr and
momentum after every step."""
import math
import warnings

import numpy as np
import pytest

import tinynorm as tn
from tinynorm.optim import SGD, Adam, lr_scheduler
from tinynorm.optim.lr_scheduler import (
    ChainedScheduler, ConstantLR, CosineAnnealingLR, CyclicLR, ExponentialLR, LambdaLR, LinearLR,
    LinearWarmupCosine, MultiStepLR, OneCycleLR, ReduceLROnPlateau, SequentialLR, StepLR,
)

STEPS = 30


def optimizer_of(lib, kind="sgd"):
    params = [lib.zeros(1, requires_grad=True), lib.zeros(1, requires_grad=True)]
    groups = [{"params": params[:1]}, {"params": params[1:], "lr": 0.5}]
    if kind == "adam":
        return lib.optim.Adam(groups, lr=0.1)
    return lib.optim.SGD(groups, lr=0.1, momentum=0.9)


def snapshot(optimizer, schedulers):
    """Every group's lr and momentum (SGD's, or Adam's beta1), and each scheduler's get_last_lr()."""
    values = []
    for group in optimizer.param_groups:
        values += [group["lr"], group["betas"][0] if "betas" in group else group["momentum"]]
    for scheduler in schedulers:
        values += list(scheduler.get_last_lr())
    return values


def run(lib, make, kind="sgd", steps=STEPS, by_hand=None, metrics=None):
    """The snapshots after construction and after each of ``steps`` steps. ``by_hand`` maps a step to a
    function of the optimizer run just before that step's scheduler step; ``metrics`` feeds
    ReduceLROnPlateau."""
    optimizer = optimizer_of(lib, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation warnings and the like
        made = make(lib.optim.lr_scheduler, optimizer)
        schedulers = made if isinstance(made, list) else [made]
        record = [snapshot(optimizer, schedulers)]
        for t in range(steps):
            optimizer.step()
            if by_hand and t in by_hand:
                by_hand[t](optimizer)
            for scheduler in schedulers:
                scheduler.step(metrics[t]) if metrics is not None else scheduler.step()
            record.append(snapshot(optimizer, schedulers))
    return record


def halve_first_group(optimizer):
    optimizer.param_groups[0]["lr"] *= 0.5


PLATEAU_METRICS = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.4, 0.41] * 3

# name -> (make(scheduler module, optimizer) -> scheduler or list of schedulers, optimizer kind, run options)
CASES = {
    "LambdaLR": (lambda s, o: s.LambdaLR(o, lambda t: 0.95**t), "sgd", {}),
    "LambdaLR-per-group": (lambda s, o: s.LambdaLR(o, [lambda t: 1 / (t + 1), lambda t: t % 3]), "sgd", {}),
    "MultiplicativeLR": (lambda s, o: s.MultiplicativeLR(o, lambda t: 0.9 if t % 2 else 0.99), "sgd", {}),
    "StepLR": (lambda s, o: s.StepLR(o, step_size=4, gamma=0.5), "sgd", {}),
    "MultiStepLR": (lambda s, o: s.MultiStepLR(o, milestones=[3, 7, 7, 12], gamma=0.3), "sgd", {}),
    "ExponentialLR": (lambda s, o: s.ExponentialLR(o, gamma=0.9), "sgd", {}),
    "ConstantLR": (lambda s, o: s.ConstantLR(o, factor=0.25, total_iters=6), "sgd", {}),
    "LinearLR": (lambda s, o: s.LinearLR(o, start_factor=0.1, end_factor=0.8, total_iters=10), "sgd", {}),
    "LinearLR-down-to-0": (lambda s, o: s.LinearLR(o, start_factor=1.0, end_factor=0.0, total_iters=8), "sgd", {}),
    "PolynomialLR": (lambda s, o: s.PolynomialLR(o, total_iters=12, power=2.0), "sgd", {}),
    "CosineAnnealingLR": (lambda s, o: s.CosineAnnealingLR(o, T_max=10, eta_min=0.01), "sgd", {}),
    "CosineAnnealingWarmRestarts": (lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2, eta_min=0.01),
                                    "sgd", {}),
    "CyclicLR-triangular": (lambda s, o: s.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=4), "sgd", {}),
    "CyclicLR-triangular2-adam": (lambda s, o: s.CyclicLR(o, 0.01, 0.1, step_size_up=3, step_size_down=5,
                                                           mode="triangular2"), "adam", {}),
    "CyclicLR-exp_range": (lambda s, o: s.CyclicLR(o, 0.01, 0.1, step_size_up=5, mode="exp_range", gamma=0.9,
                                                   cycle_momentum=False), "sgd", {}),
    "CyclicLR-scale_fn": (lambda s, o: s.CyclicLR(o, 0.01, 0.1, step_size_up=2, scale_fn=lambda x: 1 / (1 + x),
                                                  scale_mode="iterations"), "sgd", {}),
    "OneCycleLR-cos": (lambda s, o: s.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=STEPS), "sgd", {}),
    "OneCycleLR-linear-three-phase-adam": (lambda s, o: s.OneCycleLR(
        o, max_lr=1.0, epochs=5, steps_per_epoch=6, pct_start=0.25, anneal_strategy="linear", three_phase=True,
        div_factor=10.0, final_div_factor=100.0), "adam", {}),
    "ReduceLROnPlateau": (lambda s, o: s.ReduceLROnPlateau(o, factor=0.5, patience=2, cooldown=1, min_lr=[0.01, 0.2]),
                          "sgd", dict(metrics=PLATEAU_METRICS)),
    "ReduceLROnPlateau-max-abs": (lambda s, o: s.ReduceLROnPlateau(o, mode="max", threshold=0.05,
                                                                   threshold_mode="abs", patience=1),
                                  "sgd", dict(metrics=[-m for m in PLATEAU_METRICS])),
    # compositions
    "two-schedulers-StepLR-ExponentialLR": (lambda s, o: [s.StepLR(o, 5, 0.5), s.ExponentialLR(o, 0.95)], "sgd", {}),
    "two-schedulers-Cosine-MultiStep": (lambda s, o: [s.CosineAnnealingLR(o, T_max=12), s.MultiStepLR(o, [4, 9])],
                                        "sgd", {}),
    "two-schedulers-LinearLR-Polynomial": (lambda s, o: [s.LinearLR(o, 0.2, total_iters=6),
                                                         s.PolynomialLR(o, total_iters=20)], "sgd", {}),
    "ChainedScheduler": (lambda s, o: s.ChainedScheduler([s.ConstantLR(o, factor=0.1, total_iters=4),
                                                          s.ExponentialLR(o, gamma=0.9)]), "sgd", {}),
    "SequentialLR-warmup-cosine": (lambda s, o: s.SequentialLR(
        o, [s.LinearLR(o, start_factor=0.1, total_iters=5), s.CosineAnnealingLR(o, T_max=20)], milestones=[5]),
        "sgd", {}),
    "SequentialLR-three": (lambda s, o: s.SequentialLR(
        o, [s.ConstantLR(o, 0.5, total_iters=3), s.ExponentialLR(o, 0.8), s.StepLR(o, 3, 0.5)], milestones=[4, 11]),
        "sgd", {}),
    "SequentialLR-of-chained": (lambda s, o: s.SequentialLR(
        o, [s.ChainedScheduler([s.LinearLR(o, 0.5, total_iters=4), s.MultiStepLR(o, [3], 0.1)]),
            s.ExponentialLR(o, 0.9)], milestones=[6]), "sgd", {}),
    # an lr changed by hand carries on
    "by-hand-StepLR": (lambda s, o: s.StepLR(o, 4, 0.5), "sgd", dict(by_hand={6: halve_first_group})),
    "by-hand-ExponentialLR": (lambda s, o: s.ExponentialLR(o, 0.9), "sgd", dict(by_hand={3: halve_first_group})),
    "by-hand-CosineAnnealingLR": (lambda s, o: s.CosineAnnealingLR(o, T_max=8, eta_min=0.001), "sgd",
                                  dict(by_hand={5: halve_first_group, 17: halve_first_group})),
    "by-hand-LinearLR": (lambda s, o: s.LinearLR(o, 0.25, total_iters=10), "sgd", dict(by_hand={4: halve_first_group})),
    "by-hand-ReduceLROnPlateau": (lambda s, o: s.ReduceLROnPlateau(o, patience=1), "sgd",
                                  dict(by_hand={8: halve_first_group}, metrics=PLATEAU_METRICS)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_schedule_matches_torch(name):
    torch = pytest.importorskip("torch")
    make, kind, options = CASES[name]
    ours = run(tn, make, kind, **options)
    theirs = run(torch, make, kind, **options)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)
    assert len({tuple(values) for values in ours}) >= 2  # the schedule did change the lr


def test_chainable_schedules_compose_as_products():
    """Without PyTorch: two chainable schedules multiply, and an lr set by hand carries on from there."""
    optimizer = SGD([tn.zeros(1, requires_grad=True)], lr=1.0)
    step, exponential = StepLR(optimizer, step_size=3, gamma=0.5), ExponentialLR(optimizer, gamma=0.9)
    for t in range(1, 10):
        optimizer.step()
        step.step()
        exponential.step()
        assert math.isclose(optimizer.param_groups[0]["lr"], 0.5 ** (t // 3) * 0.9**t, rel_tol=1e-12)
    optimizer.param_groups[0]["lr"] = 0.01
    step.step()
    exponential.step()
    assert math.isclose(optimizer.param_groups[0]["lr"], 0.01 * 0.9, rel_tol=1e-12)  # step 10: no StepLR boundary


# --------------------------------------------------------------------------------- closed forms


# name -> (make, the lr of a group with base lr ``base`` at step t)
CLOSED_FORMS = {
    "StepLR": (lambda o: StepLR(o, step_size=4, gamma=0.5), lambda base, t: base * 0.5 ** (t // 4)),
    "MultiStepLR": (lambda o: MultiStepLR(o, [3, 7, 7], gamma=0.5),
                    lambda base, t: base * 0.5 ** ((t >= 3) + 2 * (t >= 7))),
    "ExponentialLR": (lambda o: ExponentialLR(o, 0.9), lambda base, t: base * 0.9**t),
    "ConstantLR": (lambda o: ConstantLR(o, 0.25, total_iters=5), lambda base, t: base * (0.25 if t < 5 else 1.0)),
    "LinearLR": (lambda o: LinearLR(o, 0.2, 1.0, total_iters=8), lambda base, t: base * (0.2 + 0.8 * min(t, 8) / 8)),
    "CosineAnnealingLR": (lambda o: CosineAnnealingLR(o, T_max=10, eta_min=0.01),
                          lambda base, t: 0.01 + (base - 0.01) * (1 + math.cos(math.pi * t / 10)) / 2),
}


@pytest.mark.parametrize("name", list(CLOSED_FORMS))
def test_schedules_follow_their_closed_form(name):
    make, formula = CLOSED_FORMS[name]
    optimizer = optimizer_of(tn)
    scheduler = make(optimizer)
    for t in range(25):
        np.testing.assert_allclose(scheduler.get_last_lr(), [formula(0.1, t), formula(0.5, t)], rtol=1e-12)
        optimizer.step()
        scheduler.step()


@pytest.mark.parametrize("name", list(CLOSED_FORMS))
def test_step_with_an_epoch_jumps_by_the_closed_form(name):
    make, formula = CLOSED_FORMS[name]
    optimizer = optimizer_of(tn)
    scheduler = make(optimizer)
    for epoch in (7, 2, 13):
        with pytest.warns(UserWarning, match="epoch parameter in `scheduler.step\\(\\)`"):
            scheduler.step(epoch)
        np.testing.assert_allclose(scheduler.get_last_lr(), [formula(0.1, epoch), formula(0.5, epoch)], rtol=1e-12)
        assert scheduler.last_epoch == epoch


def test_linear_warmup_cosine_shape():
    optimizer = optimizer_of(tn)
    scheduler = LinearWarmupCosine(optimizer, warmup_steps=10, total_steps=50, min_lr=0.001)
    lrs = [scheduler.get_last_lr()]
    for _ in range(60):
        optimizer.step()
        scheduler.step()
        lrs.append(scheduler.get_last_lr())
    lrs = np.array(lrs)
    for column, base in enumerate((0.1, 0.5)):
        lr = lrs[:, column]
        np.testing.assert_allclose(lr[:11], base * np.arange(11) / 10, rtol=1e-14)  # 0 up to base
        assert np.all(np.diff(lr[10:51]) < 0)  # then strictly down...
        np.testing.assert_allclose(lr[30], (base + 0.001) / 2, rtol=1e-14)  # ...through the midpoint...
        np.testing.assert_allclose(lr[50:], 0.001, rtol=1e-14)  # ...to min_lr, and stays there


# ------------------------------------------------------------------------------ resuming


RESUMABLE = ["StepLR", "MultiStepLR", "ExponentialLR", "ConstantLR", "LinearLR", "PolynomialLR", "CosineAnnealingLR",
             "CosineAnnealingWarmRestarts", "CyclicLR-triangular2-adam", "OneCycleLR-cos", "LambdaLR",
             "MultiplicativeLR", "ReduceLROnPlateau", "ChainedScheduler", "SequentialLR-three",
             "two-schedulers-StepLR-ExponentialLR"]


@pytest.mark.parametrize("name", RESUMABLE)
def test_state_dict_resume_continues_the_schedule(name):
    """12 steps, save the optimizer's and the schedulers' state dicts, load them into new objects and
    step on: the same lrs and momenta as an uninterrupted run."""
    make, kind, options = CASES[name]
    metrics = options.get("metrics")
    whole = run(tn, make, kind, metrics=metrics)

    def step(optimizer, schedulers, t):
        optimizer.step()
        for scheduler in schedulers:
            scheduler.step(metrics[t]) if metrics is not None else scheduler.step()

    optimizer = optimizer_of(tn, kind)
    made = make(lr_scheduler, optimizer)
    schedulers = made if isinstance(made, list) else [made]
    for t in range(12):
        step(optimizer, schedulers, t)
    saved_optimizer = optimizer.state_dict()
    saved = [scheduler.state_dict() for scheduler in schedulers]
    optimizer = optimizer_of(tn, kind)
    made = make(lr_scheduler, optimizer)
    schedulers = made if isinstance(made, list) else [made]
    optimizer.load_state_dict(saved_optimizer)
    for scheduler, state in zip(schedulers, saved):
        scheduler.load_state_dict(state)
    resumed = []
    for t in range(12, STEPS):
        step(optimizer, schedulers, t)
        resumed.append(snapshot(optimizer, schedulers))
    np.testing.assert_allclose(resumed, whole[13:], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", list(CASES))
def test_state_dicts_survive_a_checkpoint_file(name, tmp_path):
    """tinynorm.save writes every scheduler's state dict (no pickles), and it loads back equal."""
    make, kind, options = CASES[name]
    optimizer = optimizer_of(tn, kind)
    made = make(lr_scheduler, optimizer)
    for scheduler in made if isinstance(made, list) else [made]:
        for t in range(5):
            scheduler.step(options["metrics"][t]) if "metrics" in options else scheduler.step()
        state = scheduler.state_dict()
        tn.save(state, tmp_path / "scheduler.npz")
        scheduler.load_state_dict(tn.load(tmp_path / "scheduler.npz"))
        assert scheduler.state_dict() == state


@pytest.mark.parametrize("name", ["StepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR", "PolynomialLR"])
def test_last_epoch_resume_matches_torch(name):
    """Resuming from the optimizer's state dict and ``last_epoch=k``, as PyTorch documents."""
    torch = pytest.importorskip("torch")
    make_case = CASES[name][0]

    def resumed(lib):
        optimizer = optimizer_of(lib)
        scheduler = make_case(lib.optim.lr_scheduler, optimizer)
        for _ in range(7):
            optimizer.step()
            scheduler.step()
        saved = optimizer.state_dict()
        optimizer = optimizer_of(lib)
        optimizer.load_state_dict(saved)
        scheduler_class = type(scheduler)
        arguments = {key: getattr(scheduler, key) for key in ("step_size", "gamma", "T_max", "eta_min",
                                                              "start_factor", "end_factor", "total_iters", "power")
                     if hasattr(scheduler, key)}
        scheduler = scheduler_class(optimizer, last_epoch=6, **arguments)
        lrs = [scheduler.get_last_lr()]
        for _ in range(10):
            optimizer.step()
            scheduler.step()
            lrs.append(scheduler.get_last_lr())
        return lrs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "Detected call of `lr_scheduler.step()` before `optimizer.step()`"
        np.testing.assert_allclose(resumed(tn), resumed(torch), rtol=1e-12)


def test_lambda_state_dict_saves_callable_objects_only():
    class Decay:
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, t):
            return self.rate**t

    optimizer = optimizer_of(tn)
    scheduler = LambdaLR(optimizer, [Decay(0.5), lambda t: 1.0])
    state = scheduler.state_dict()
    assert state["lr_lambdas"] == [{"rate": 0.5}, None] and "optimizer" not in state
    other = LambdaLR(optimizer_of(tn), [Decay(0.9), lambda t: 2.0])
    other.load_state_dict(state)
    assert other.lr_lambdas[0].rate == 0.5


# ----------------------------------------------------------------------------------- errors


def test_a_failed_load_changes_nothing():
    optimizer = optimizer_of(tn)
    scheduler = SequentialLR(optimizer, [ConstantLR(optimizer, 0.5, total_iters=2), ExponentialLR(optimizer, 0.9)],
                             milestones=[3])
    for _ in range(5):
        optimizer.step()
        scheduler.step()
    before = scheduler.state_dict()
    broken = scheduler.state_dict()
    broken["_schedulers"][1]["gamma"] = "fast"
    with pytest.raises(ValueError, match="gamma must be like the current value 0.9, got 'fast'"):
        scheduler.load_state_dict(broken)
    broken = scheduler.state_dict()
    broken["last_epoch"] = 2.5
    with pytest.raises(ValueError, match="last_epoch"):
        scheduler.load_state_dict(broken)
    without_gamma = ExponentialLR(optimizer_of(tn), 0.5).state_dict()
    del without_gamma["gamma"]
    with pytest.raises(ValueError, match=r"missing keys \['gamma'\].*another scheduler"):
        ExponentialLR(optimizer_of(tn), 0.5).load_state_dict(without_gamma)
    with pytest.raises(ValueError, match="unexpected keys"):
        ExponentialLR(optimizer_of(tn), 0.5).load_state_dict(StepLR(optimizer_of(tn), 3).state_dict())
    with pytest.raises(TypeError, match="expected a dict"):
        scheduler.load_state_dict(None)
    assert scheduler.state_dict() == before


def test_one_cycle_refuses_steps_past_the_end_and_keeps_its_count():
    optimizer = optimizer_of(tn)
    scheduler = OneCycleLR(optimizer, max_lr=1.0, total_steps=3)
    for _ in range(3):
        scheduler.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total steps is 3"):
        scheduler.step()
    assert scheduler.last_epoch == 3


@pytest.mark.parametrize("make, error, message", [
    (lambda o: StepLR(o, step_size=0), ValueError, "step_size must be a positive int, got 0"),
    (lambda o: StepLR(o, step_size=2, gamma="x"), TypeError, "gamma must be a real number, got 'x'"),
    (lambda o: StepLR([tn.zeros(1)], step_size=2), TypeError, "list is not an Optimizer"),
    (lambda o: StepLR(optimizer_of(tn), step_size=2, last_epoch=5), KeyError, "initial_lr"),
    (lambda o: MultiStepLR(o, [2.5]), TypeError, "milestones must be ints"),
    (lambda o: CosineAnnealingLR(o, T_max=2.5), ValueError, "T_max must be a positive int, got 2.5"),
    (lambda o: ConstantLR(o, factor=0), ValueError, "greater than 0"),
    (lambda o: ConstantLR(o, factor=1.5), ValueError, "less or equal to 1"),
    (lambda o: LinearLR(o, start_factor=0), ValueError, "Starting multiplicative factor"),
    (lambda o: LinearLR(o, end_factor=2), ValueError, "Ending multiplicative factor"),
    (lambda o: LinearLR(o, total_iters=0), ValueError, "total_iters must be a positive int"),
    (lambda o: LambdaLR(o, [lambda t: 1.0]), ValueError, "Expected 2 lr_lambdas, but got 1"),
    (lambda o: LambdaLR(o, 0.5), TypeError, "lr_lambda should be a function, but got float"),
    (lambda o: LinearWarmupCosine(o, warmup_steps=10, total_steps=10), ValueError, "total_steps must be an int >"),
    (lambda o: CyclicLR(o, 0.1, [1.0]), ValueError, "max_lr must have the same length as optimizer.param_groups"),
    (lambda o: CyclicLR(o, 0.1, 1.0, mode="square"), ValueError, "mode is invalid and scale_fn is None"),
    (lambda o: CyclicLR(tn.optim.Adagrad([tn.zeros(1, requires_grad=True)]), 0.1, 1.0), ValueError,
     "optimizer must support momentum or beta1"),
    (lambda o: OneCycleLR(o, 1.0), ValueError, "You must define either total_steps OR"),
    (lambda o: OneCycleLR(o, 1.0, total_steps=10, pct_start=1), ValueError, "Expected float between 0 and 1"),
    (lambda o: OneCycleLR(o, 1.0, total_steps=10, anneal_strategy="exp"), ValueError, "anneal_strategy must be"),
    (lambda o: ReduceLROnPlateau(o, factor=1.0), ValueError, "Factor should be < 1.0."),
    (lambda o: ReduceLROnPlateau(o, mode="up"), ValueError, "mode up is unknown!"),
    (lambda o: ReduceLROnPlateau(o, min_lr=[0.1]), ValueError, "expected 2 min_lrs, got 1"),
    (lambda o: ReduceLROnPlateau(o, patience=-1), ValueError, "patience must be an int >= 0"),
    (lambda o: SequentialLR(o, [], []), ValueError, "expects at least one scheduler"),
    (lambda o: SequentialLR(o, [StepLR(o, 2), StepLR(o, 3)], [2, 3]), ValueError, "one more than the number"),
    (lambda o: SequentialLR(o, [StepLR(o, 2), StepLR(optimizer_of(tn), 3)], [2]), ValueError, "same optimizer"),
    (lambda o: SequentialLR(o, [StepLR(o, 2), ReduceLROnPlateau(o)], [2]), ValueError, "does not support"),
    (lambda o: ChainedScheduler([]), ValueError, "at least one scheduler to be chained"),
])
def test_bad_arguments_raise_clear_errors(make, error, message):
    with pytest.raises(error, match=message):
        make(optimizer_of(tn))


def test_plateau_refuses_a_metric_that_is_not_a_number():
    scheduler = ReduceLROnPlateau(optimizer_of(tn))
    with pytest.raises(TypeError, match="metrics must be a number or a one-element tensor, got str"):
        scheduler.step("low")
    scheduler.step(tn.tensor(0.5))
    assert scheduler.best == 0.5


def test_adam_betas_are_cycled():
    optimizer = Adam([tn.zeros(1, requires_grad=True)], lr=0.1, betas=(0.9, 0.99))
    scheduler = OneCycleLR(optimizer, max_lr=1.0, total_steps=10)
    assert optimizer.param_groups[0]["betas"] == (0.95, 0.99)
    for _ in range(3):
        scheduler.step()
    assert 0.85 < optimizer.param_groups[0]["betas"][0] < 0.95 and optimizer.param_groups[0]["betas"][1] == 0.99
