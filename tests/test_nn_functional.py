"""nn.functional beyond activations, losses and pooling, against PyTorch: pad, interpolate (and
Upsample), normalize, cosine_similarity, pairwise_distance, one_hot, embedding with its options,
scaled_dot_product_attention, the dropouts, Unflatten and Identity.

Every test takes a ``device``; ``tests/cuda/sim_nn_api.py`` runs them on ``'cuda'`` in the simulator.
"""
import numpy as np
import pytest

import tinynorm as tn
from nn_compare import same, same_error, torch


RNG = np.random.default_rng(0)


def F(lib):
    return lib.nn.functional


# ----------------------------------------------------------------------------- pad
PADS = [
    ((1, 2), "constant"), ((1, 2, 0, 3), "constant"), ((-1, 2, 1, -2), "constant"), ((1, 1, 2, 0, 1, 1), "constant"),
    ((2, 1), "reflect"), ((1, 2, 2, 1), "reflect"), ((-1, 2), "reflect"),
    ((2, 3), "replicate"), ((1, 0, 3, 2), "replicate"), ((-1, 2), "replicate"),
    ((2, 3), "circular"), ((1, 2, 3, 1), "circular"), ((-1, 2), "circular"),
]


@pytest.mark.parametrize("pad, mode", PADS, ids=str)
def test_pad_matches_torch(pad, mode, device):
    dims = len(pad) // 2
    x = RNG.standard_normal((2, 3, 4, 5, 4)[:dims + 2])
    same(lambda lib, t: F(lib).pad(t, pad, mode=mode), x, device=device)
    same(lambda lib, t: F(lib).pad(t, pad, mode=mode), x[0], device=device)  # unbatched
    if mode == "constant":
        same(lambda lib, t: F(lib).pad(t, pad, mode=mode), RNG.standard_normal((2, 3, 4, 5)), device=device)


def test_pad_constant_value_and_errors_match_torch(device):
    x = RNG.standard_normal((1, 3))
    same(lambda lib, t: F(lib).pad(t, (1, 1), value=2.5), x, device=device)
    same(lambda lib, t: F(lib).pad(lib.tensor([1, 2]), (1, 1), value=2.5), x, device=device)
    for pad, mode in (((1, 2, 3), "constant"), ((1, 1, 1, 1, 1, 1), "constant"), ((3, 3), "reflect"),
                      ((1, 1), "xx"), ((4, 4), "circular"), ((1, 1, 1, 1), "reflect")):
        same_error(lambda lib, t: F(lib).pad(t, pad, mode=mode), x, device=device)
    same_error(lambda lib, t: F(lib).pad(t, (1, 1), mode="replicate", value=3.0), x, device=device)
    same_error(lambda lib, t: F(lib).pad(t[0], (1, 1), mode="reflect"), x, device=device)
    same_error(lambda lib, t: F(lib).pad(t, (1.0, 1)), x, device=device)


# ----------------------------------------------------------------------------- interpolate
RESIZES = [
    ("nearest", dict(scale_factor=2)), ("nearest", dict(size=(5, 3))), ("nearest", dict(scale_factor=1.7)),
    ("nearest", dict(size=(7, 11))), ("nearest-exact", dict(size=(5, 9))), ("nearest-exact", dict(scale_factor=0.6)),
    ("bilinear", dict(scale_factor=2)), ("bilinear", dict(size=(3, 7), align_corners=True)),
    ("bilinear", dict(scale_factor=(1.5, 0.5))), ("bilinear", dict(scale_factor=2.5, recompute_scale_factor=True)),
    ("bilinear", dict(size=(1, 1), align_corners=True)), ("bicubic", dict(scale_factor=2)),
    ("bicubic", dict(size=(3, 8), align_corners=True)), ("bicubic", dict(size=(2, 3))), ("area", dict(size=(3, 2))),
    ("area", dict(scale_factor=0.5)),
]


@pytest.mark.parametrize("mode, kwargs", RESIZES, ids=str)
def test_interpolate_2d_matches_torch(mode, kwargs, device):
    x = RNG.standard_normal((2, 2, 4, 6))
    same(lambda lib, t: F(lib).interpolate(t, mode=mode, **kwargs), x, device=device)


@pytest.mark.parametrize("mode, kwargs", [("nearest", dict(scale_factor=3)), ("linear", dict(size=7)),
                                          ("linear", dict(scale_factor=0.5, align_corners=True)),
                                          ("area", dict(size=3)), ("nearest-exact", dict(size=4))], ids=str)
def test_interpolate_1d_matches_torch(mode, kwargs, device):
    same(lambda lib, t: F(lib).interpolate(t, mode=mode, **kwargs), RNG.standard_normal((2, 3, 5)), device=device)


@pytest.mark.parametrize("mode, kwargs", [("nearest", dict(scale_factor=2)), ("trilinear", dict(size=(3, 4, 2))),
                                          ("trilinear", dict(scale_factor=1.5, align_corners=True))], ids=str)
def test_interpolate_3d_matches_torch(mode, kwargs, device):
    same(lambda lib, t: F(lib).interpolate(t, mode=mode, **kwargs), RNG.standard_normal((1, 2, 2, 3, 3)),
         device=device)


def test_interpolate_float32_matches_torch_bit_for_bit_positions(device):
    x = RNG.standard_normal((1, 1, 5, 7)).astype(np.float32)
    for mode, kwargs in (("nearest", dict(scale_factor=1.3)), ("bilinear", dict(size=(9, 4))),
                         ("bicubic", dict(scale_factor=1.5))):
        same(lambda lib, t: F(lib).interpolate(t, mode=mode, **kwargs), x, device=device, rtol=1e-6, atol=1e-6)


def test_interpolate_errors_match_torch(device):
    x = RNG.standard_normal((1, 2, 4, 4))
    for call in (lambda lib, t: F(lib).interpolate(t, size=3, scale_factor=2),
                 lambda lib, t: F(lib).interpolate(t),
                 lambda lib, t: F(lib).interpolate(t, size=(3,)),
                 lambda lib, t: F(lib).interpolate(t, scale_factor=(2, 2, 2)),
                 lambda lib, t: F(lib).interpolate(t, size=3, mode="nearest", align_corners=True),
                 lambda lib, t: F(lib).interpolate(t, size=3, mode="linear"),
                 lambda lib, t: F(lib).interpolate(t, size=3, mode="trilinear"),
                 lambda lib, t: F(lib).interpolate(t[0], size=3, mode="bilinear"),
                 lambda lib, t: F(lib).interpolate(t, size=3, recompute_scale_factor=True),
                 lambda lib, t: F(lib).interpolate(t, size=(2.5, 3))):
        same_error(call, x, device=device)


UPSAMPLES = [
    lambda nn: nn.Upsample(scale_factor=2), lambda nn: nn.Upsample(size=(3, 4), mode="bilinear", align_corners=True),
    lambda nn: nn.Upsample(scale_factor=2.5, mode="bilinear"), lambda nn: nn.Upsample(scale_factor=(2, 3)),
    lambda nn: nn.UpsamplingNearest2d(scale_factor=2), lambda nn: nn.UpsamplingBilinear2d(size=3),
]


@pytest.mark.parametrize("make", UPSAMPLES)
def test_upsample_modules_match_torch(make, device):
    assert repr(make(tn.nn)) == repr(make(torch.nn))
    same(lambda lib, t: make(lib.nn)(t), RNG.standard_normal((1, 2, 3, 4)), device=device)


PADDING_LAYERS = [
    (lambda nn: nn.ZeroPad1d(2), (2, 3, 4)), (lambda nn: nn.ZeroPad2d((1, 0, 2, 1)), (3, 4, 4)),
    (lambda nn: nn.ZeroPad3d(1), (1, 2, 2, 2, 2)), (lambda nn: nn.ConstantPad1d((1, 2), 3.5), (3, 4)),
    (lambda nn: nn.ConstantPad2d(1, -1), (1, 2, 3, 3)), (lambda nn: nn.ConstantPad3d((0, 1, 1, 0, 2, 0), 2.0),
                                                          (2, 2, 2, 2)),
    (lambda nn: nn.ReflectionPad1d((2, 1)), (2, 3, 4)), (lambda nn: nn.ReflectionPad2d(1), (1, 2, 3, 3)),
    (lambda nn: nn.ReflectionPad3d(1), (1, 1, 2, 3, 3)), (lambda nn: nn.ReplicationPad1d(2), (2, 3)),
    (lambda nn: nn.ReplicationPad2d((0, 2, 1, 0)), (2, 3, 3)), (lambda nn: nn.ReplicationPad3d(1), (1, 2, 2, 2)),
    (lambda nn: nn.CircularPad1d(1), (1, 2, 3)), (lambda nn: nn.CircularPad2d((1, 2, 0, 1)), (1, 2, 3, 3)),
    (lambda nn: nn.CircularPad3d(1), (1, 1, 2, 2, 2)),
]


@pytest.mark.parametrize("make, shape", PADDING_LAYERS)
def test_padding_layers_match_torch(make, shape, device):
    assert repr(make(tn.nn)) == repr(make(torch.nn))
    same(lambda lib, t: make(lib.nn)(t), RNG.standard_normal(shape), device=device)
    assert isinstance(make(tn.nn), tn.nn.modules.padding._ConstantPadNd) == isinstance(
        make(torch.nn), torch.nn.modules.padding._ConstantPadNd)


def test_padding_layer_errors_match_torch(device):
    same_error(lambda lib, t: lib.nn.ReflectionPad2d(1)(t), RNG.standard_normal(3), device=device)
    same_error(lambda lib, t: lib.nn.ReflectionPad1d(3)(t), RNG.standard_normal((2, 3)), device=device)
    with pytest.raises(ValueError, match=r"ZeroPad2d: padding must be an int or a tuple of 4 ints, got \(1, 2\)"):
        tn.nn.ZeroPad2d((1, 2))


@pytest.mark.parametrize("factor, shape", [(2, (2, 8, 3, 2)), (3, (9, 2, 1)), (2, (1, 2, 4, 3, 1))])
def test_pixel_shuffle_and_unshuffle_match_torch_and_invert_each_other(factor, shape, device):
    same(lambda lib, t: lib.nn.functional.pixel_shuffle(t, factor), RNG.standard_normal(shape), device=device)
    shuffled = shape[:-3] + (shape[-3] // factor ** 2, shape[-2] * factor, shape[-1] * factor)
    same(lambda lib, t: lib.nn.PixelUnshuffle(factor)(t), RNG.standard_normal(shuffled), device=device)
    x = tn.tensor(RNG.standard_normal(shape), device=device)
    np.testing.assert_array_equal(tn.nn.PixelUnshuffle(factor)(tn.nn.PixelShuffle(factor)(x)).numpy(), x.numpy())
    assert repr(tn.nn.PixelShuffle(factor)) == repr(torch.nn.PixelShuffle(factor))
    assert repr(tn.nn.PixelUnshuffle(factor)) == repr(torch.nn.PixelUnshuffle(factor))


def test_pixel_shuffle_errors_match_torch(device):
    for call, shape in ((lambda lib, t: lib.nn.functional.pixel_shuffle(t, 2), (5, 2, 2)),
                        (lambda lib, t: lib.nn.functional.pixel_shuffle(t, 2), (4, 2)),
                        (lambda lib, t: lib.nn.functional.pixel_unshuffle(t, 2), (4, 3, 2)),
                        (lambda lib, t: lib.nn.functional.pixel_unshuffle(t, 2), (4, 2, 3))):
        message = same_error(call, RNG.standard_normal(shape), device=device)
        assert "divisible" in message or "at least 3 dimensions" in message


# ----------------------------------------------------------------------------- norms and distances
def test_normalize_matches_torch_zero_vectors_included(device):
    x = RNG.standard_normal((3, 4, 2))
    x[1, :, 0] = 0
    for kwargs in (dict(), dict(dim=0), dict(p=1, dim=-1), dict(p=3.0), dict(p=float("inf"), dim=1),
                   dict(eps=0.5)):
        same(lambda lib, t: F(lib).normalize(t, **kwargs), x, device=device)


def test_cosine_similarity_and_pairwise_distance_match_torch(device):
    a, b = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
    a[2] = 0
    same(lambda lib, x, y: F(lib).cosine_similarity(x, y), a, b, device=device)
    same(lambda lib, x, y: F(lib).cosine_similarity(x, y, dim=0, eps=1e-3), a, b, device=device)
    same(lambda lib, x, y: F(lib).cosine_similarity(x, y), a, b[:1], device=device)  # broadcast
    same(lambda lib, x, y: lib.nn.CosineSimilarity(dim=1)(x, y), a, b, device=device)
    for kwargs in (dict(), dict(p=1.0), dict(keepdim=True), dict(p=3.0, eps=1e-3)):
        same(lambda lib, x, y: F(lib).pairwise_distance(x, y, **kwargs), a, b, device=device)
        same(lambda lib, x, y: lib.nn.PairwiseDistance(**kwargs)(x, y), a, b, device=device)


# ----------------------------------------------------------------------------- lookups
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, 0.0, np.inf])
def test_pdist_matches_torch_with_a_repeated_row(p, device):
    x = RNG.standard_normal((5, 3))
    x[3] = x[1]  # a zero distance: PyTorch's gradient there is 0
    same(lambda lib, t: lib.nn.functional.pdist(t, p), x, device=device)


def test_pdist_errors_match_torch():
    same_error(lambda lib, t: lib.nn.functional.pdist(t), RNG.standard_normal(3))
    same_error(lambda lib, t: lib.nn.functional.pdist(t, -1.0), RNG.standard_normal((3, 2)))


def test_one_hot_matches_torch(device):
    ids = np.array([[0, 3], [2, 1]])
    same(lambda lib, t: F(lib).one_hot(lib.tensor(ids)), ids, device=device)
    same(lambda lib, t: F(lib).one_hot(lib.tensor(ids), 6), ids, device=device)
    for bad, classes in (([0, 4], 3), ([-1, 0], -1), ([], -1)):
        same_error(lambda lib, t: F(lib).one_hot(lib.tensor(bad, dtype=lib.int64), classes), ids, device=device)
    same_error(lambda lib, t: F(lib).one_hot(lib.tensor([0.0, 1.0])), ids, device=device)


@pytest.mark.parametrize("kwargs", [dict(), dict(padding_idx=1), dict(padding_idx=-1), dict(scale_grad_by_freq=True),
                                    dict(padding_idx=0, scale_grad_by_freq=True)], ids=str)
def test_embedding_options_match_torch(kwargs, device):
    ids = np.array([[1, 3, 3], [0, 1, 3]])
    same(lambda lib, w: F(lib).embedding(lib.tensor(ids), w, **kwargs), RNG.standard_normal((5, 3)), device=device)


def test_embedding_max_norm_renormalizes_looked_up_rows_as_torch(device):
    weight = RNG.standard_normal((5, 3)) * 2
    ids = np.array([1, 3, 3, 4])
    for max_norm, norm_type in ((1.0, 2.0), (0.5, 1.0)):
        ours, theirs = tn.tensor(weight, device=device), torch.tensor(weight)
        version = ours._version
        out = F(tn).embedding(tn.tensor(ids, device=device), ours, max_norm=max_norm, norm_type=norm_type)
        expected = F(torch).embedding(torch.tensor(ids), theirs, max_norm=max_norm, norm_type=norm_type)
        np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-12)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)  # the weight itself, in place
        assert ours._version == version + 1


def test_embedding_module_matches_torch(device):
    for kwargs in (dict(), dict(padding_idx=0), dict(padding_idx=2, max_norm=1.0), dict(max_norm=1, norm_type=1.0,
                                                                                        scale_grad_by_freq=True)):
        assert repr(tn.nn.Embedding(10, 3, **kwargs)) == repr(torch.nn.Embedding(10, 3, **kwargs))
    table = tn.nn.Embedding(6, 4, padding_idx=2)
    assert not table.weight.numpy()[2].any() and table.weight.numpy()[3].any()
    pretrained = RNG.standard_normal((4, 2))
    for freeze in (True, False):
        ours = tn.nn.Embedding.from_pretrained(tn.tensor(pretrained), freeze=freeze, padding_idx=1)
        theirs = torch.nn.Embedding.from_pretrained(torch.tensor(pretrained), freeze=freeze, padding_idx=1)
        assert ours.weight.requires_grad == theirs.weight.requires_grad == (not freeze)
        assert repr(ours) == repr(theirs)
        np.testing.assert_array_equal(ours(tn.tensor([[1, 3]])).numpy(),
                                      theirs(torch.tensor([[1, 3]])).detach().numpy())
    same_error(lambda lib, t: lib.nn.Embedding(3, 2, padding_idx=3), pretrained, device=device)
    same_error(lambda lib, t: lib.nn.Embedding(3, 2)(lib.tensor([1.0])), pretrained, device=device)
    with pytest.raises(NotImplementedError, match="sparse"):
        tn.nn.Embedding(3, 2, sparse=True)


def test_embedding_module_trains_on_the_device_as_torch(device):
    """A table moved to the device: lookups, the gradient (none for the padding row) and max_norm's
    in-place renormalization of the looked-up rows, as PyTorch's."""
    weight, ids = RNG.standard_normal((6, 3)) * 2, np.array([[0, 2, 4], [4, 5, 2]])
    upstream = RNG.standard_normal((2, 3, 3))
    options = dict(freeze=False, padding_idx=2, max_norm=1.5)
    ours = tn.nn.Embedding.from_pretrained(tn.tensor(weight), **options).to(device)
    theirs = torch.nn.Embedding.from_pretrained(torch.tensor(weight), **options)
    out = ours(tn.tensor(ids, device=device))
    expected = theirs(torch.tensor(ids))
    out.backward(tn.tensor(upstream, device=device))
    expected.backward(torch.tensor(upstream))
    assert ours.weight.device == device
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-12)


# ----------------------------------------------------------------------------- attention
ALLOWED = RNG.random((3, 5)) > 0.3
ALLOWED[:, 0] = True
BLOCKED_ROW = ALLOWED.copy()
BLOCKED_ROW[1] = False  # a query that may attend nothing: zeros, as PyTorch's safe softmax gives
SDPA = [dict(), dict(is_causal=True), dict(scale=0.3), dict(mask=ALLOWED), dict(mask=BLOCKED_ROW),
        dict(mask=RNG.standard_normal((3, 5))), dict(mask=np.where(BLOCKED_ROW, 0.5, -np.inf))]


@pytest.mark.parametrize("index", range(len(SDPA)))
def test_scaled_dot_product_attention_matches_torch(index, device):
    q, k, v = RNG.standard_normal((2, 2, 3, 4)), RNG.standard_normal((2, 2, 5, 4)), RNG.standard_normal((2, 2, 5, 6))
    options = dict(SDPA[index])
    mask = options.pop("mask", None)

    def attention(lib, a, b, c):
        attn_mask = None if mask is None else lib.tensor(mask)
        return F(lib).scaled_dot_product_attention(a, b, c, attn_mask=attn_mask, **options)

    same(attention, q, k, v, device=device)


def test_scaled_dot_product_attention_shapes_and_errors_match_torch(device):
    q, k, v = RNG.standard_normal((1, 4, 3, 2)), RNG.standard_normal((1, 2, 5, 2)), RNG.standard_normal((1, 2, 5, 3))
    same(lambda lib, a, b, c: F(lib).scaled_dot_product_attention(a, b, c, enable_gqa=True), q, k, v, device=device)
    same(lambda lib, a, b, c: F(lib).scaled_dot_product_attention(a[0, 0], b[0, 0], c[0, 0], is_causal=True),
         q, k, v, device=device)
    same_error(lambda lib, a, b, c: F(lib).scaled_dot_product_attention(a, b, c, attn_mask=lib.ones(3, 5,
                                                                        dtype=lib.bool), is_causal=True),
               q[:, :2], k, v, device=device)
    same_error(lambda lib, a, b, c: F(lib).scaled_dot_product_attention(a, b, c, attn_mask=lib.zeros(3, 5,
                                                                        dtype=lib.int64)), q[:, :2], k, v,
               device=device)


FUSED_SDPA = [dict(), dict(is_causal=True), dict(is_causal=True, scale=-0.4)]


@pytest.mark.parametrize("options", FUSED_SDPA)
@pytest.mark.parametrize("lengths", [(3, 5), (5, 3), (4, 4)])  # more keys, more queries, square
def test_fused_attention_gradients_match_finite_differences(options, lengths):
    """The unmasked or causal attention is one op (scale and mask inside the softmax kernel); its
    backward against float64 finite differences with a random upstream gradient."""
    from tinynorm.autograd import gradcheck
    length, keys = lengths
    q, k, v = (tn.tensor(RNG.standard_normal(shape), requires_grad=True)
               for shape in ((2, 3, length, 4), (2, 3, keys, 4), (2, 3, keys, 6)))
    out = F(tn).scaled_dot_product_attention(q, k, v, **options)
    assert out.grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0"
    assert gradcheck(lambda a, b, c: F(tn).scaled_dot_product_attention(a, b, c, **options), (q, k, v))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_attention_equals_the_composite_one(dtype, device):
    """is_causal (fused) and the same mask given as a bool attn_mask (built from ops) give one result."""
    length, keys = 6, 9
    q, k, v = (tn.tensor(RNG.standard_normal(shape).astype(dtype), requires_grad=True, device=device)
               for shape in ((2, 3, length, 8), (2, 3, keys, 8), (2, 3, keys, 5)))
    upstream = tn.tensor(RNG.standard_normal((2, 3, length, 5)).astype(dtype), device=device)
    mask = tn.tensor(np.tril(np.ones((length, keys), bool)), device=device)
    results = []
    for options in (dict(is_causal=True), dict(attn_mask=mask)):
        for x in (q, k, v):
            x.grad = None
        out = F(tn).scaled_dot_product_attention(q, k, v, scale=0.7, **options)
        assert (out.grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0") == ("is_causal" in options)
        out.backward(upstream)
        results.append([out.detach().numpy(), q.grad.numpy(), k.grad.numpy(), v.grad.numpy()])
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    for fused, composite in zip(*results):
        np.testing.assert_allclose(fused, composite, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("shape", [(6, 8), (2, 6, 8), (2, 3, 6, 8)])
def test_a_nan_among_masked_scores_reaches_the_rows_torch_gives_it(shape):
    """PyTorch's fused CPU kernel (4-D inputs) never reads masked scores; its math path (fewer dims)
    adds the mask to them, so a NaN there spreads over every row."""
    q, k, v = RNG.standard_normal(shape), RNG.standard_normal(shape), RNG.standard_normal(shape)
    k[..., -1, 0] = np.nan  # the last key: masked for every query but the last
    ours = F(tn).scaled_dot_product_attention(tn.tensor(q), tn.tensor(k), tn.tensor(v), is_causal=True)
    theirs = torch.nn.functional.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v),
                                                              is_causal=True)
    np.testing.assert_array_equal(np.isnan(ours.numpy()), np.isnan(theirs.numpy()))


def test_attention_dropout_drops_weights(device):
    tn.manual_seed(0)
    q = tn.tensor(RNG.standard_normal((1, 1, 64, 8)), device=device)
    out = F(tn).scaled_dot_product_attention(q, q, tn.ones(1, 1, 64, 1, dtype=tn.float64, device=device),
                                             dropout_p=0.5)
    rows = out.numpy().reshape(-1)  # each row sums its kept weights / (1 - p): mean 1, spread > 0
    assert abs(rows.mean() - 1) < 0.2 and rows.std() > 0.1


# ----------------------------------------------------------------------------- dropout and shapes
@pytest.mark.parametrize("name, shape", [("dropout1d", (8, 50, 3)), ("dropout2d", (8, 50, 3, 3)),
                                         ("dropout3d", (4, 50, 2, 2, 2)), ("dropout1d", (50, 3))])
def test_channel_dropout_zeroes_whole_channels(name, shape, device):
    tn.manual_seed(0)
    x = tn.ones(*shape, device=device, requires_grad=True)
    out = getattr(F(tn), name)(x, p=0.4)
    values = out.numpy().reshape(-1 if len(shape) == 2 else shape[0] * shape[1], int(np.prod(shape[-1:] if len(
        shape) == 2 else shape[2:]))) if len(shape) > 2 else out.numpy()
    per_channel = values.reshape(values.shape[0], -1)
    assert np.all(np.isclose(per_channel, 0) | np.isclose(per_channel, 1 / 0.6))
    assert (per_channel == per_channel[:, :1]).all()  # a channel is kept or dropped whole
    assert 0.25 < (per_channel[:, 0] == 0).mean() < 0.55
    upstream = np.random.default_rng(1).standard_normal(shape)
    out.backward(tn.tensor(upstream, dtype=tn.float32, device=device))
    np.testing.assert_allclose(x.grad.numpy(), upstream * out.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(getattr(F(tn), name)(x, p=0.4, training=False).numpy(), x.numpy())


def test_dropout_variants_match_torch_shapes_errors_and_reprs(device):
    x = RNG.standard_normal((2, 3, 4))
    same_error(lambda lib, t: F(lib).dropout1d(t[0, 0]), x, device=device)
    same_error(lambda lib, t: F(lib).dropout(t, p=1.5), x, device=device)
    same_error(lambda lib, t: lib.nn.Dropout2d(p=-0.1), x, device=device)
    same(lambda lib, t: F(lib).dropout(t, p=1.0), x, device=device)
    same(lambda lib, t: F(lib).dropout2d(t, p=1.0), x[None], device=device)
    with pytest.warns(UserWarning, match="dropout2d"):
        assert F(tn).dropout2d(tn.tensor(x), 0.5).shape == x.shape
    for make in (lambda nn: nn.Dropout(), lambda nn: nn.Dropout(0.2, True), lambda nn: nn.Dropout1d(0.3),
                 lambda nn: nn.Dropout2d(), lambda nn: nn.Dropout3d(0.1)):
        assert repr(make(tn.nn)) == repr(make(torch.nn))


def test_inplace_dropout_writes_the_input(device):
    tn.manual_seed(0)
    h = tn.ones(200, device=device)
    version = h._version
    assert F(tn).dropout(h, 0.5, inplace=True) is h and h._version == version + 1
    assert set(np.unique(h.numpy())) == {0.0, 2.0}
    g = tn.ones(4, 20, 3, 1, device=device)
    assert F(tn).dropout2d(g, 0.5, inplace=True) is g and set(np.unique(g.numpy())) == {0.0, 2.0}
    assert tn.nn.Dropout(0.5, inplace=True).eval()(h) is h


def test_unflatten_and_identity_match_torch(device):
    x = RNG.standard_normal((2, 12, 3))
    for dim, sizes in ((1, (3, 4)), (1, [2, -1, 3]), (-1, (3, 1))):
        same(lambda lib, t: lib.nn.Unflatten(dim, sizes)(t), x, device=device)
        assert repr(tn.nn.Unflatten(dim, sizes)) == repr(torch.nn.Unflatten(dim, sizes))
    same_error(lambda lib, t: lib.nn.Unflatten(1, (5, 2))(t), x, device=device)
    same_error(lambda lib, t: lib.nn.Unflatten(1, 12), x, device=device)
    same_error(lambda lib, t: lib.nn.Unflatten(1, (2.0, 6)), x, device=device)
    same(lambda lib, t: lib.nn.Identity(3, unused="yes")(t), x, device=device)
    assert repr(tn.nn.Identity(3, a=4)) == repr(torch.nn.Identity(3, a=4))
