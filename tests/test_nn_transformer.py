"""MultiheadAttention and the Transformer layers against PyTorch: the same state-dict keys, and with
PyTorch's parameters loaded, the same outputs, attention weights, input and parameter gradients under a
random upstream gradient, for every mask kind and option; finite differences in float64; PyTorch's
reprs and errors; a small Transformer that learns a copy task.

Every test takes a ``device``; ``tests/cuda/sim_nn_api.py`` runs some on ``'cuda'`` in the simulator.
"""
import numpy as np
import pytest

import tinynorm as tn
from nn_compare import assert_close, same, same_error, torch
from tinynorm.autograd import gradcheck

pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")  # PyTorch's, about its fast path
RNG = np.random.default_rng(0)
E, H, L, S, N = 8, 2, 4, 5, 3
KEY_MASK = RNG.random((N, S)) < 0.3
KEY_MASK[:, 0] = False  # every query may attend some key
ATTN_MASK = RNG.random((L, S)) < 0.3
ATTN_MASK[:, 0] = False


def twins(make, device, dtype="float64"):
    """``{tn: ours, torch: theirs}``: ``make(nn)`` built by both libraries, PyTorch's parameters copied
    into tinynorm's module (the state-dict keys must agree), ours moved to ``device``."""
    torch.manual_seed(0)
    theirs = make(torch.nn).to(getattr(torch, dtype))
    ours = make(tn.nn).to(getattr(tn, dtype))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: tn.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return {tn: ours.to(device), torch: theirs}


def module_of(modules, lib):
    return modules[torch if lib is torch else tn]


def same_parameter_grads(modules, rtol=1e-10, atol=1e-12):
    ours = {k: None if p.grad is None else p.grad.numpy() for k, p in modules[tn].named_parameters()}
    theirs = {k: None if p.grad is None else p.grad.numpy() for k, p in modules[torch].named_parameters()}
    assert list(ours) == list(theirs)
    for name in theirs:
        assert_close(ours[name], theirs[name], rtol, atol)


def masks(lib, kind):
    """The attention options of a test case, as ``lib``'s tensors."""
    if kind == "bool attn_mask":
        return {"attn_mask": lib.tensor(ATTN_MASK)}
    if kind == "float attn_mask":
        return {"attn_mask": lib.tensor(np.where(ATTN_MASK, -1.5, 0.25))}
    if kind == "3-D attn_mask":
        return {"attn_mask": lib.tensor(np.repeat(ATTN_MASK[None], N * H, 0))}
    if kind == "key_padding_mask":
        return {"key_padding_mask": lib.tensor(KEY_MASK), "average_attn_weights": False}
    if kind == "both":
        return {"attn_mask": lib.tensor(np.where(ATTN_MASK, -np.inf, 0.0)),
                "key_padding_mask": lib.tensor(np.where(KEY_MASK, -np.inf, 0.0))}
    return {"need_weights": False} if kind == "no weights" else {}


MHA_OPTIONS = {"default": {}, "batch_first": {"batch_first": True}, "kdim vdim": {"kdim": 3, "vdim": 6},
               "bias_kv": {"add_bias_kv": True}, "zero_attn": {"add_zero_attn": True}, "no bias": {"bias": False}}
MASKS = ["none", "no weights", "bool attn_mask", "float attn_mask", "3-D attn_mask", "key_padding_mask", "both"]


@pytest.mark.parametrize("option", MHA_OPTIONS)
@pytest.mark.parametrize("mask", MASKS)
def test_multihead_attention_matches_torch(option, mask, device):
    options = MHA_OPTIONS[option]
    modules = twins(lambda nn: nn.MultiheadAttention(E, H, **options), device)
    first = options.get("batch_first", False)

    def shape(length, size):
        return (N, length, size) if first else (length, N, size)

    def attention(lib, q, k, v):
        output, weights = module_of(modules, lib)(q, k, v, **masks(lib, mask))
        return (output,) if weights is None else (output, weights)

    query, key, value = (RNG.standard_normal(shape(L, E)), RNG.standard_normal(shape(S, options.get("kdim", E))),
                         RNG.standard_normal(shape(S, options.get("vdim", E))))
    same(attention, query, key, value, device=device)
    same_parameter_grads(modules)


def test_unbatched_self_attention_and_per_head_weights_match_torch(device):
    modules = twins(lambda nn: nn.MultiheadAttention(E, H), device)
    same(lambda lib, x: module_of(modules, lib)(x, x, x, average_attn_weights=False), RNG.standard_normal((L, E)),
         device=device)
    same(lambda lib, x: module_of(modules, lib)(x, x, x, key_padding_mask=lib.tensor(KEY_MASK[0])),
         RNG.standard_normal((S, E)), device=device)


def test_multihead_attention_passes_gradcheck():
    layer = tn.nn.MultiheadAttention(4, 2, kdim=3, dtype=tn.float64)
    mask = tn.tensor(ATTN_MASK[:3, :2])
    q, k, v = (tn.tensor(RNG.standard_normal(shape), requires_grad=True) for shape in ((3, 2, 4), (2, 2, 3), (2, 2, 4)))
    assert gradcheck(lambda q, k, v: layer(q, k, v, attn_mask=mask), (q, k, v))


def test_multihead_attention_errors_and_repr_match_torch(device):
    modules = twins(lambda nn: nn.MultiheadAttention(E, H), device)
    x = RNG.standard_normal((L, N, E))
    same_error(lambda lib, q: module_of(modules, lib)(q, q, q, is_causal=True), x, device=device)
    same_error(lambda lib, q: module_of(modules, lib)(q, q, q, attn_mask=lib.zeros(L, L + 1)), x, device=device)
    same_error(lambda lib, q: module_of(modules, lib)(q, q, q, attn_mask=lib.zeros(2, L, L)), x, device=device)
    with pytest.raises(ValueError, match="embed_dim must be divisible by num_heads, got 6 and 4"):
        tn.nn.MultiheadAttention(6, 4)
    with pytest.raises(TypeError, match="argument 'key' must be Tensor, not list"):
        modules[tn](tn.tensor(x, device=device), [1.0], tn.tensor(x, device=device))
    assert repr(modules[tn]) == repr(modules[torch])
    assert isinstance(modules[tn].out_proj, tn.nn.modules.linear.NonDynamicallyQuantizableLinear)


LAYER_OPTIONS = {"post-norm": {}, "pre-norm": {"norm_first": True}, "gelu batch_first": {"activation": "gelu",
                 "batch_first": True}, "no bias": {"bias": False}}


@pytest.mark.parametrize("option", LAYER_OPTIONS)
def test_transformer_encoder_matches_torch(option, device, dtype="float64", rtol=1e-10):
    options = LAYER_OPTIONS[option]

    def make(nn):
        layer = nn.TransformerEncoderLayer(E, H, 16, dropout=0.0, **options)
        if nn is torch.nn:
            return nn.TransformerEncoder(layer, 2, nn.LayerNorm(E), enable_nested_tensor=False)
        return nn.TransformerEncoder(layer, 2, nn.LayerNorm(E))

    modules = twins(make, device, dtype)
    length, batch = (N, L) if options.get("batch_first") else (L, N)
    x = RNG.standard_normal((L, N, E)).astype(dtype)
    causal = lambda lib: lib.nn.Transformer.generate_square_subsequent_mask(length, dtype=getattr(lib, dtype))
    padding = RNG.random((batch, length)) < 0.3
    padding[:, 0] = False
    same(lambda lib, s: module_of(modules, lib)(s, mask=causal(lib).to(s.device), is_causal=True), x,
         device=device, rtol=rtol, atol=rtol)
    same(lambda lib, s: module_of(modules, lib)(s, src_key_padding_mask=lib.tensor(padding)), x, device=device,
         rtol=rtol, atol=rtol)
    same_parameter_grads(modules, rtol, rtol)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_matches_torch(norm_first, device, dtype="float64", rtol=1e-10):
    modules = twins(lambda nn: nn.Transformer(E, H, 2, 2, 16, dropout=0.0, norm_first=norm_first), device, dtype)

    def transformer(lib, src, tgt):
        mask = lib.nn.Transformer.generate_square_subsequent_mask(L, dtype=getattr(lib, dtype)).to(src.device)
        return module_of(modules, lib)(src, tgt, tgt_mask=mask, tgt_is_causal=True,
                                       memory_key_padding_mask=lib.tensor(KEY_MASK))

    same(transformer, RNG.standard_normal((S, N, E)).astype(dtype), RNG.standard_normal((L, N, E)).astype(dtype),
         device=device, rtol=rtol, atol=rtol)
    same_parameter_grads(modules, rtol, rtol)


def test_transformer_layers_reprs_masks_and_errors_match_torch():
    for make in (lambda nn: nn.TransformerEncoderLayer(E, H, 16),
                 lambda nn: nn.TransformerDecoderLayer(E, H, 16, activation=nn.GELU(), norm_first=True),
                 lambda nn: nn.Transformer(E, H, 1, 1, 16)):
        assert repr(make(tn.nn)) == repr(make(torch.nn))
    for size in (1, 4):
        np.testing.assert_array_equal(tn.nn.Transformer.generate_square_subsequent_mask(size).numpy(),
                                      torch.nn.Transformer.generate_square_subsequent_mask(size).numpy())
    modules = twins(lambda nn: nn.Transformer(E, H, 1, 1, 16), "cpu")
    same_error(lambda lib, s, t: module_of(modules, lib)(s, t), np.zeros((S, N, E)), np.zeros((L, N + 1, E)))
    same_error(lambda lib, s, t: module_of(modules, lib)(s, t), np.zeros((S, N, E)), np.zeros((L, N, E + 1)))
    same_error(lambda lib: lib.nn.TransformerEncoderLayer(E, H, activation="tanh"))
    layers = tn.nn.TransformerEncoder(tn.nn.TransformerEncoderLayer(E, H, 16), 2).layers
    assert layers[0].linear1.weight is not layers[1].linear1.weight  # clones, not one shared layer
    np.testing.assert_array_equal(layers[0].linear1.weight.numpy(), layers[1].linear1.weight.numpy())


STEPS = 60  # the error is 16% after 40 steps, 0 after 60


def test_a_small_transformer_learns_to_reverse_sequences():
    """Encoder-decoder with teacher forcing on 6-token sequences over 5 symbols: the reversed sequence
    is predicted token by token (chance: 80% error) after 60 Adam steps."""
    tn.manual_seed(0)
    rng = np.random.default_rng(1)
    vocab, length, d = 6, 6, 32  # symbol 0 starts the decoder's input
    embed = tn.nn.Embedding(vocab, d)
    model = tn.nn.Transformer(d, 4, 1, 1, 64, dropout=0.0, batch_first=True)
    head = tn.nn.Linear(d, vocab)
    parameters = list(embed.parameters()) + list(model.parameters()) + list(head.parameters())
    optimizer = tn.optim.Adam(parameters, lr=3e-3)
    positions = tn.tensor(rng.standard_normal((length, d)) * 0.5, dtype=tn.float32)
    mask = tn.nn.Transformer.generate_square_subsequent_mask(length)

    def logits(src):
        target = np.flip(src, 1)
        shifted = np.concatenate([np.zeros((len(src), 1), np.int64), target[:, :-1]], 1)
        out = model(embed(tn.tensor(src)) + positions, embed(tn.tensor(shifted)) + positions, tgt_mask=mask)
        return head(out).reshape(-1, vocab), tn.tensor(target.reshape(-1).copy())

    for _ in range(STEPS):
        scores, target = logits(rng.integers(1, vocab, (32, length)))
        loss = tn.nn.functional.cross_entropy(scores, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with tn.no_grad():
        scores, target = logits(rng.integers(1, vocab, (256, length)))
    error = float((scores.argmax(1) != target).float().mean())
    assert error < 0.05, error
