"""Loss functions and modules against PyTorch: every reduction and option, values and gradients under a
random upstream gradient, PyTorch's error classes, and the modules' buffers and reprs.

Every test takes a ``device``; ``tests/cuda/sim_nn_api.py`` runs them on ``'cuda'`` in the simulator.
"""
import numpy as np
import pytest

import tinynorm as tn
from nn_compare import same, same_error, torch
from tinynorm.autograd import gradcheck


RNG = np.random.default_rng(0)
LOGITS = RNG.standard_normal((6, 4)) * 2
LOGITS_4D = RNG.standard_normal((3, 4, 2, 2))
TARGET = np.array([0, 3, 1, -1, 2, 3])  # -1: ignored below
TARGET_4D = RNG.integers(0, 4, (3, 2, 2))
WEIGHT = np.array([0.5, 2.0, 1.0, 0.25])
PROBS = RNG.dirichlet(np.ones(4), 6)


def F(lib):
    return lib.nn.functional


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_weighted_cross_entropy_matches_torch(reduction, smoothing, device):
    def loss(lib, x):
        return F(lib).cross_entropy(x, lib.tensor(TARGET), weight=lib.tensor(WEIGHT), ignore_index=-1,
                                    reduction=reduction, label_smoothing=smoothing)

    same(loss, LOGITS, device=device)
    same(lambda lib, x: F(lib).cross_entropy(x, lib.tensor(TARGET_4D), weight=lib.tensor(WEIGHT),
                                             reduction=reduction, label_smoothing=smoothing), LOGITS_4D, device=device)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_with_probability_targets_matches_torch(reduction, smoothing, weighted, device):
    def loss(lib, x, p):
        weight = lib.tensor(WEIGHT) if weighted else None
        return F(lib).cross_entropy(x, p, weight=weight, reduction=reduction, label_smoothing=smoothing)

    same(loss, LOGITS, PROBS, device=device)
    same(loss, LOGITS_4D, RNG.dirichlet(np.ones(4), (3, 2, 2)).transpose(0, 3, 1, 2), device=device)


def test_cross_entropy_of_an_unbatched_input_matches_torch(device):
    for reduction in ("mean", "none"):
        same(lambda lib, x: F(lib).cross_entropy(x, lib.tensor(2), reduction=reduction), LOGITS[0], device=device)
        same(lambda lib, x, p: F(lib).cross_entropy(x, p, reduction=reduction), LOGITS[0], PROBS[0], device=device)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_weighted_nll_loss_matches_torch(reduction, device):
    same(lambda lib, x: F(lib).nll_loss(x, lib.tensor(TARGET), lib.tensor(WEIGHT), ignore_index=-1,
                                        reduction=reduction), LOGITS, device=device)
    same(lambda lib, x: F(lib).nll_loss(x, lib.tensor(TARGET_4D), lib.tensor(WEIGHT), reduction=reduction),
         LOGITS_4D, device=device)


def test_all_ignored_targets_give_nan_without_a_warning(device):
    with np.errstate(all="raise"):
        same(lambda lib, x: F(lib).nll_loss(x, lib.tensor([-1, -1]), lib.tensor(WEIGHT), ignore_index=-1),
             LOGITS[:2], device=device)
        same(lambda lib, x: F(lib).nll_loss(x, lib.tensor([-1, -1]), ignore_index=-1), LOGITS[:2], device=device)
        same(lambda lib, x: F(lib).cross_entropy(x, lib.tensor([-1, -1]), ignore_index=-1), LOGITS[:2],
             device=device)


def test_legacy_size_average_and_reduce_flags_match_torch(device):
    for size_average, reduce in ((False, None), (None, False), (True, True)):
        with pytest.warns(UserWarning, match="size_average and reduce"):
            same(lambda lib, x: F(lib).cross_entropy(x, lib.tensor(TARGET[:3]), size_average=size_average,
                                                     reduce=reduce), LOGITS[:3], device=device)


def test_classification_loss_errors_match_torch(device):
    ce = F(tn).cross_entropy
    same_error(lambda lib, x: F(lib).cross_entropy(x, lib.tensor([0.0, 1.0, 2.0])), LOGITS[:3], device=device)
    same_error(lambda lib, x: F(lib).cross_entropy(x, lib.tensor([0, 1])), LOGITS[:3], device=device)
    same_error(lambda lib, x: F(lib).cross_entropy(x, lib.tensor([0, 1, 4])), LOGITS[:3], device=device)
    same_error(lambda lib, x: F(lib).cross_entropy(x, lib.tensor([0, 1, 2]), label_smoothing=1.5), LOGITS[:3],
               device=device)
    same_error(lambda lib, x: F(lib).cross_entropy(x, lib.tensor([0, 1, 2]), weight=lib.ones(3)), LOGITS[:3],
               device=device)
    same_error(lambda lib, x: F(lib).cross_entropy(x, lib.tensor(PROBS[:3, :3])), LOGITS[:3], device=device)
    same_error(lambda lib, x: F(lib).nll_loss(x, lib.tensor([0, 1, 2]), reduction="avg"), LOGITS[:3], device=device)
    same_error(lambda lib, x: F(lib).nll_loss(x, lib.zeros((6, 3), dtype=lib.int64)), LOGITS_4D.reshape(6, 4, 2),
               device=device)
    with pytest.raises(IndexError, match="4"):
        ce(tn.tensor(LOGITS[:3], device=device), tn.tensor([0, 1, 4], device=device))


LOSSES_OF_TWO = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy",
                 "binary_cross_entropy_with_logits", "cross_entropy", "nll_loss"]


@pytest.mark.parametrize("name", LOSSES_OF_TWO)
@pytest.mark.parametrize("bad, kind", [([0.5, 0.5, 0.5], "list"), (None, "NoneType"),
                                       (np.full(3, 0.5), "numpy.ndarray")])
def test_losses_refuse_what_is_not_a_tensor_naming_the_argument(name, bad, kind, device):
    x = tn.full((3,), 0.5, device=device)
    loss = getattr(F(tn), name)
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'target' must be Tensor, not {kind}"):
        loss(x, bad)
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'input' must be Tensor"):
        loss(bad, x)


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss")  # kl_div's, in both libraries
def test_loss_options_of_the_wrong_type_raise_type_errors_as_torch(device):
    target = np.array([0, 1, 2])
    for options in ({"label_smoothing": "0.1"}, {"label_smoothing": None}, {"ignore_index": "a"},
                    {"weight": [1.0, 2.0, 3.0]}, {"reduction": None}):
        message = same_error(lambda lib, x: F(lib).cross_entropy(x, lib.tensor(target), **options), LOGITS[:3, :3],
                             device=device)
        assert str(next(iter(options))) in message
    for name, options in (("smooth_l1_loss", {"beta": "1"}), ("huber_loss", {"delta": None}),
                          ("kl_div", {"log_target": "yes"})):
        message = same_error(lambda lib, x: getattr(F(lib), name)(x, x.detach(), **options), LOGITS[0],
                             device=device)
        assert next(iter(options)) in message
    with pytest.raises(TypeError, match="label_smoothing must be a number, got '0.1'"):
        tn.nn.CrossEntropyLoss(label_smoothing="0.1")(tn.tensor(LOGITS, device=device), tn.tensor(TARGET % 4,
                                                                                                  device=device))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_inputs_without_classes_match_torch(reduction, device):
    for name in ("cross_entropy", "nll_loss"):
        same(lambda lib, x: getattr(F(lib), name)(x, lib.full((4,), -100), reduction=reduction), np.zeros((4, 0)),
             device=device)
        same(lambda lib, x: getattr(F(lib), name)(x, lib.zeros(0, dtype=lib.int64), reduction=reduction),
             np.zeros((0, 0)), device=device)
        message = same_error(lambda lib, x: getattr(F(lib), name)(x, lib.tensor([0, -100, 2, 1])), np.zeros((4, 0)),
                             device=device)
        assert "no classes" in message and "3 other targets" in message


def test_negative_and_large_targets_are_index_errors_naming_them(device):
    for options in (lambda lib: {}, lambda lib: {"weight": lib.ones(3, dtype=lib.float64)},
                    lambda lib: {"label_smoothing": 0.1}):
        message = same_error(lambda lib, x: F(lib).cross_entropy(x, lib.tensor([0, -3, 1, 7]), **options(lib)),
                             LOGITS[:4, :3], device=device)
        assert "must be in [0, 2]" in message and "[-3, 7]" in message
    message = same_error(lambda lib, x: F(lib).cross_entropy(x, lib.rand(3, 2)), LOGITS[:3, :3], device=device)
    assert "probability targets must have the input's shape [3, 3], got [3, 2]" in message


ELEMENTWISE = {
    "mse": lambda lib, r: lambda x, y: F(lib).mse_loss(x, y, reduction=r),
    "l1": lambda lib, r: lambda x, y: F(lib).l1_loss(x, y, reduction=r),
    "smooth_l1": lambda lib, r: lambda x, y: F(lib).smooth_l1_loss(x, y, reduction=r, beta=0.5),
    "smooth_l1 beta 0": lambda lib, r: lambda x, y: F(lib).smooth_l1_loss(x, y, reduction=r, beta=0.0),
    "huber": lambda lib, r: lambda x, y: F(lib).huber_loss(x, y, reduction=r, delta=0.7),
    "kl_div": lambda lib, r: lambda x, y: F(lib).kl_div(x, y.abs(), reduction=r),
    "kl_div log_target": lambda lib, r: lambda x, y: F(lib).kl_div(x, y, reduction=r, log_target=True),
    "bce_with_logits": lambda lib, r: lambda x, y: F(lib).binary_cross_entropy_with_logits(x, y.sigmoid(),
                                                                                             reduction=r),
}


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss")  # kl_div's, in both libraries
@pytest.mark.parametrize("name", ELEMENTWISE)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_elementwise_losses_match_torch_in_both_arguments(name, reduction, device):
    x, y = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    same(lambda lib, a, b: ELEMENTWISE[name](lib, reduction)(a, b), x, y, device=device)


def test_kl_div_batchmean_and_zero_targets_match_torch(device):
    target = np.array([[0.0, 0.5, 0.5], [0.2, 0.0, 0.8]])
    same(lambda lib, x: F(lib).kl_div(x, lib.tensor(target), reduction="batchmean"), np.log(PROBS[:2, :3]),
         device=device)
    with pytest.warns(UserWarning, match="batchmean"):
        same(lambda lib, x: F(lib).kl_div(x, lib.tensor(target)), np.log(PROBS[:2, :3]), device=device)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_weighted_regression_losses_match_torch(reduction, device):
    x, y, w = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3)), RNG.random((4, 3))
    for name in ("mse_loss", "l1_loss", "huber_loss"):
        same(lambda lib, a, b, v: getattr(F(lib), name)(a, b, reduction=reduction, weight=v), x, y, w, device=device)


def test_regression_losses_broadcast_a_target_with_torch_warning(device):
    x, y = RNG.standard_normal((4, 3)), RNG.standard_normal(3)
    for name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"):
        with pytest.warns(UserWarning, match="target size"):
            same(lambda lib, a, b: getattr(F(lib), name)(a, b), x, y, device=device)
    with pytest.warns(UserWarning):
        same_error(lambda lib, a, b: F(lib).mse_loss(a, b), x, y[:2], device=device)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_matches_torch(reduction, device):
    p, t = RNG.uniform(0.05, 0.95, (5, 3)), RNG.random((5, 3))
    same(lambda lib, x, y: F(lib).binary_cross_entropy(x, y, reduction=reduction), p, t, device=device)
    w = RNG.random(3)
    same(lambda lib, x, y: F(lib).binary_cross_entropy(x, y, lib.tensor(w), reduction=reduction), p, t,
         device=device)


def test_binary_cross_entropy_at_saturated_probabilities_matches_torch(device):
    """x = 0 or 1 exactly (a sigmoid that rounded): PyTorch's finite loss (logs floored at -100) and
    finite gradient, where log(0) would give inf and nan."""
    same(lambda lib, x: F(lib).binary_cross_entropy(x, lib.tensor([0.0, 1.0, 1.0, 0.0], dtype=lib.float64)),
         np.array([0.0, 1.0, 0.0, 1.0]), device=device)


def test_binary_cross_entropy_with_logits_weights_match_torch(device):
    x, t = RNG.standard_normal((5, 3)) * 30, RNG.random((5, 3))  # large logits: no overflow either way
    w, pos = RNG.random((5, 3)), np.array([1.0, 3.0, 0.5])
    for reduction in ("mean", "none"):
        same(lambda lib, a, b: F(lib).binary_cross_entropy_with_logits(a, b, lib.tensor(w), reduction=reduction,
                                                                       pos_weight=lib.tensor(pos)), x, t, device=device)


def test_binary_cross_entropy_passes_gradcheck(device):
    x = tn.tensor(RNG.uniform(0.1, 0.9, (3, 2)), device=device, requires_grad=True)
    t = tn.tensor(RNG.random((3, 2)), device=device, requires_grad=True)
    assert gradcheck(lambda a, b: F(tn).binary_cross_entropy(a, b, reduction="sum"), (x, t))


def test_pointwise_loss_errors_match_torch(device):
    same_error(lambda lib, x, y: F(lib).binary_cross_entropy(x, y), np.array([0.5, 1.5]), np.array([0.0, 1.0]),
               device=device)
    same_error(lambda lib, x, y: F(lib).binary_cross_entropy(x, y), np.array([0.5, 0.5]), np.array([0.0, 2.0]),
               device=device)
    same_error(lambda lib, x, y: F(lib).binary_cross_entropy(x, y), np.array([0.5, 0.5]), np.zeros(3), device=device)
    same_error(lambda lib, x, y: F(lib).binary_cross_entropy_with_logits(x, y), np.ones(2), np.zeros(3),
               device=device)
    same_error(lambda lib, x, y: F(lib).huber_loss(x, y, delta=0.0), np.ones(2), np.zeros(2), device=device)
    same_error(lambda lib, x, y: F(lib).smooth_l1_loss(x, y, beta=-1.0), np.ones(2), np.zeros(2), device=device)
    same_error(lambda lib, x, y: F(lib).kl_div(x, y, reduction="xx"), np.ones(2), np.zeros(2), device=device)
    same_error(lambda lib, x, y: F(lib).mse_loss(x, y, weight=lib.ones(2)), np.ones((2, 2)), np.zeros((2, 2)),
               device=device)
    # Class and element weights are constants of these losses (PyTorch refuses weights that require grad).
    same_error(lambda lib, x, w: F(lib).cross_entropy(x, lib.tensor([0, 1]), weight=w), LOGITS[:2], WEIGHT,
               device=device)
    same_error(lambda lib, x, w: F(lib).nll_loss(x, lib.tensor([0, 1]), weight=w), LOGITS[:2], WEIGHT, device=device)
    same_error(lambda lib, x, w: F(lib).binary_cross_entropy(x, x.detach(), weight=w), PROBS[0], WEIGHT,
               device=device)
    same_error(lambda lib, x, w: F(lib).binary_cross_entropy_with_logits(x, x.detach(), pos_weight=w), LOGITS[0],
               WEIGHT, device=device)


MODULES = [
    (lambda nn: nn.CrossEntropyLoss(), LOGITS, TARGET % 4),
    (lambda nn, lib=None: nn.CrossEntropyLoss(label_smoothing=0.1, ignore_index=3), LOGITS, TARGET % 4),
    (lambda nn: nn.NLLLoss(reduction="sum"), LOGITS, TARGET % 4),
    (lambda nn: nn.MSELoss(), LOGITS, PROBS),
    (lambda nn: nn.L1Loss(reduction="none"), LOGITS, PROBS),
    (lambda nn: nn.SmoothL1Loss(beta=0.3), LOGITS, PROBS),
    (lambda nn: nn.HuberLoss(delta=2.0), LOGITS, PROBS),
    (lambda nn: nn.KLDivLoss(reduction="batchmean", log_target=True), LOGITS, np.log(PROBS)),
    (lambda nn: nn.BCELoss(), PROBS, PROBS[::-1].copy()),
    (lambda nn: nn.BCEWithLogitsLoss(), LOGITS, PROBS),
]


@pytest.mark.parametrize("index", range(len(MODULES)))
def test_loss_modules_match_torch(index, device):
    make, x, target = MODULES[index]
    same(lambda lib, a: make(lib.nn)(a, lib.tensor(target)), x, device=device)
    assert repr(make(tn.nn)) == repr(make(torch.nn))


def test_loss_module_weights_are_buffers_that_move_and_save(device):
    weight = tn.tensor(WEIGHT)
    loss = tn.nn.CrossEntropyLoss(weight=weight).to(device)
    theirs = torch.nn.CrossEntropyLoss(weight=torch.tensor(WEIGHT))
    assert list(loss.state_dict()) == list(theirs.state_dict()) == ["weight"]
    assert loss.weight.device == device
    pos = tn.nn.BCEWithLogitsLoss(weight=tn.ones(3), pos_weight=tn.ones(3))
    assert list(pos.state_dict()) == list(torch.nn.BCEWithLogitsLoss(weight=torch.ones(3),
                                                                      pos_weight=torch.ones(3)).state_dict())
    same(lambda lib, x: lib.nn.CrossEntropyLoss(weight=lib.tensor(WEIGHT), reduction="sum")(x, lib.tensor([1, 2])),
         LOGITS[:2], device=device)


# ----------------------------------------------------------------------------- margin, embedding and likelihood
X1, X2 = RNG.standard_normal((5, 4)), RNG.standard_normal((5, 4))
SIGNS = np.array([1.0, -1.0, 1.0, -1.0, -1.0])
COUNTS = RNG.poisson(2.0, (5, 4)).astype(float)  # zeros and ones included: Stirling's term is masked there


def cosine_distance(lib):
    return lambda u, v: 1 - lib.nn.functional.cosine_similarity(u, v)


EMBEDDING_LOSSES = {
    "margin_ranking": (lambda lib, r, a, b: F(lib).margin_ranking_loss(a, b, lib.tensor(SIGNS), margin=0.3,
                                                                       reduction=r), X1[:, 0], X2[:, 0]),
    "hinge_embedding": (lambda lib, r, a: F(lib).hinge_embedding_loss(a, lib.tensor(np.sign(X2)), 0.5,
                                                                      reduction=r), X1),
    "soft_margin": (lambda lib, r, a: F(lib).soft_margin_loss(a, lib.tensor(np.sign(X2)), reduction=r), X1),
    "multilabel_soft_margin": (lambda lib, r, a, t: F(lib).multilabel_soft_margin_loss(
        a, t, weight=lib.tensor(np.arange(1.0, 5.0)), reduction=r), X1, (X2 > 0).astype(float)),
    "cosine_embedding": (lambda lib, r, a, b: F(lib).cosine_embedding_loss(a, b, lib.tensor(SIGNS), 0.2,
                                                                           reduction=r), X1, X2),
    "cosine_embedding unbatched": (lambda lib, r, a, b: F(lib).cosine_embedding_loss(a, b, lib.tensor(1.0),
                                                                                     reduction=r),
                                   X1[0], X2[0]),
    "triplet": (lambda lib, r, a, p, n: F(lib).triplet_margin_loss(a, p, n, margin=0.7, reduction=r), X1, X2, X1[::-1]),
    "triplet p=1 swap": (lambda lib, r, a, p, n: F(lib).triplet_margin_loss(a, p, n, p=1, swap=True, reduction=r),
                         X1, X2, X1[::-1]),
    "triplet cosine distance": (lambda lib, r, a, p, n: F(lib).triplet_margin_with_distance_loss(
        a, p, n, distance_function=cosine_distance(lib), swap=True, reduction=r), X1, X2, X1[::-1]),
    "gaussian_nll": (lambda lib, r, a, t, v: F(lib).gaussian_nll_loss(a, t, v, reduction=r), X1, X2, np.abs(X2) + 0.1),
    "gaussian_nll row variance full": (lambda lib, r, a, t, v: F(lib).gaussian_nll_loss(a, t, v, full=True, eps=0.5,
                                                                                     reduction=r),
                                       X1, X2, np.abs(X2[:, 0])),
    "gaussian_nll broadcast variance": (lambda lib, r, a, t, v: F(lib).gaussian_nll_loss(a, t, v, reduction=r),
                                        X1, X2, np.abs(X2[:, :1])),
    "gaussian_nll float variance": (lambda lib, r, a, t: F(lib).gaussian_nll_loss(a, t, 0.5, reduction=r), X1, X2),
    "poisson_nll": (lambda lib, r, a, t: F(lib).poisson_nll_loss(a, t, reduction=r), X1, COUNTS),
    "poisson_nll full": (lambda lib, r, a: F(lib).poisson_nll_loss(a, lib.tensor(COUNTS), full=True, reduction=r), X1),
    "poisson_nll rates full": (lambda lib, r, a, t: F(lib).poisson_nll_loss(a, t, log_input=False, full=True,
                                                                         reduction=r), np.abs(X1), COUNTS + 2),
}


@pytest.mark.parametrize("name", EMBEDDING_LOSSES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_margin_embedding_and_likelihood_losses_match_torch(name, reduction, device):
    fn, *inputs = EMBEDDING_LOSSES[name]
    same(lambda lib, *xs: fn(lib, reduction, *xs), *[np.ascontiguousarray(x) for x in inputs], device=device)


def test_poisson_nll_target_gradient_is_finite_at_zero_counts():
    """PyTorch's gradient w.r.t. a target of 0 under ``full=True`` is nan (0 * log 0 inside its masked
    Stirling term); the masked term has no gradient here (docs/differences.md)."""
    x = tn.tensor(X1, requires_grad=True)
    counts = tn.tensor(COUNTS, requires_grad=True)
    tn.nn.functional.poisson_nll_loss(x, counts, full=True).backward()
    assert np.isfinite(counts.grad.numpy()).all()
    assert gradcheck(lambda a, t: tn.nn.functional.poisson_nll_loss(a, t, full=True), (x, tn.tensor(
        COUNTS + 2, requires_grad=True)))


def test_embedding_losses_pass_gradcheck():
    a, b = tn.tensor(X1, requires_grad=True), tn.tensor(X2, requires_grad=True)
    v = tn.tensor(np.abs(X2) + 0.1, requires_grad=True)
    assert gradcheck(lambda x, y: tn.nn.functional.cosine_embedding_loss(x, y, tn.tensor(SIGNS), 0.1), (a, b))
    assert gradcheck(lambda x, y, w: tn.nn.functional.gaussian_nll_loss(x, y, w, reduction="none"), (a, b, v))
    negative = tn.tensor(np.random.default_rng(3).standard_normal((5, 4)), requires_grad=True)
    assert gradcheck(lambda x, y, z: tn.nn.functional.triplet_margin_loss(x, y, z, swap=True), (a, b, negative))


def test_embedding_loss_errors_match_torch(device):
    same_error(lambda lib, a, b: F(lib).margin_ranking_loss(a, b, lib.tensor(SIGNS)), X1, X2, device=device)
    same_error(lambda lib, a, b: F(lib).cosine_embedding_loss(a, b, lib.ones(5, 1)), X1, X2, device=device)
    same_error(lambda lib, a, b: F(lib).triplet_margin_loss(a, b, b[None]), X1, X2, device=device)
    same_error(lambda lib, a, t, v: F(lib).gaussian_nll_loss(a, t, v), X1, X2, np.ones(3), device=device)
    same_error(lambda lib, a, t, v: F(lib).gaussian_nll_loss(a, t, v), X1, X2, -np.ones((5, 4)), device=device)
    same_error(lambda lib, a, t, v: F(lib).gaussian_nll_loss(a, t, v, reduction="x"), X1, X2, np.ones((5, 4)),
               device=device)
    same_error(lambda lib, a, t: F(lib).soft_margin_loss(a, t), X1, X2, device=device)  # target requires grad
    same_error(lambda lib: lib.nn.TripletMarginLoss(margin=0))
    same_error(lambda lib, a, b: F(lib).triplet_margin_with_distance_loss(a, b, b, margin=-1), X1, X2, device=device)


EMBEDDING_LOSS_MODULES = [
    lambda nn: nn.MarginRankingLoss(), lambda nn: nn.HingeEmbeddingLoss(2.0), lambda nn: nn.SoftMarginLoss(),
    lambda nn: nn.MultiLabelSoftMarginLoss(), lambda nn: nn.CosineEmbeddingLoss(0.1),
    lambda nn: nn.TripletMarginLoss(swap=True), lambda nn: nn.TripletMarginWithDistanceLoss(),
    lambda nn: nn.GaussianNLLLoss(), lambda nn: nn.PoissonNLLLoss(),
]


@pytest.mark.parametrize("make", EMBEDDING_LOSS_MODULES)
def test_embedding_loss_module_reprs_match_torch(make):
    assert repr(make(tn.nn)) == repr(make(torch.nn))


def test_embedding_loss_modules_match_torch(device):
    same(lambda lib, a, p, n: lib.nn.TripletMarginWithDistanceLoss(margin=0.5)(a, p, n), X1, X2, X1[::-1].copy(),
         device=device)
    same(lambda lib, a, t, v: lib.nn.GaussianNLLLoss(full=True)(a, t, v), X1, X2, np.abs(X2) + 0.1, device=device)
    same(lambda lib, a, t: lib.nn.PoissonNLLLoss(log_input=False)(a, t), np.abs(X1), COUNTS, device=device)
    same(lambda lib, a, b: lib.nn.CosineEmbeddingLoss(0.2, reduction="sum")(a, b, lib.tensor(SIGNS)), X1, X2,
         device=device)
    same(lambda lib, a: lib.nn.MultiLabelSoftMarginLoss(lib.tensor(np.arange(1.0, 5.0)))(a, lib.tensor(X2 > 0)
                                                                                           .to(a.dtype)),
         X1, device=device)
