"""Conv2d, pooling, attention, residual placement, blocks and the small models (issue: models to normalize)."""
from __future__ import annotations

import numpy as np
import pytest

import tinynorm as tn
import tinynorm.nn.functional as F
from tinynorm import nn
from tinynorm.autograd import gradcheck
from tinynorm.models import ResidualMLP, SignalCNN, SmallCNN, SmallMLP, TinyTransformerLM, sinusoidal_positions

rng = np.random.default_rng(0)


def leaf(*shape: int) -> tn.Tensor:
    return tn.tensor(rng.standard_normal(shape), dtype=tn.float64, requires_grad=True)


def params_of(module: nn.Module) -> tuple:
    return tuple(p for p in module.parameters())


def check_module_gradients(module: nn.Module, x: tn.Tensor, **kwargs: float) -> None:
    """gradcheck w.r.t. the input and every parameter of ``module`` (float64, random upstream gradient)."""
    module.double()
    params = params_of(module)
    assert gradcheck(lambda inp, *ps: module(inp), (x, *params), **kwargs)


def conv_reference(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int, padding: int) -> np.ndarray:
    """Direct convolution with explicit loops over output positions (float64)."""
    n, c, h, width = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (h + 2 * padding - kh) // stride + 1
    ow = (width + 2 * padding - kw) // stride + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            y[:, :, i, j] = np.einsum("nckl,ockl->no", patch, w) + b
    return y


@pytest.mark.parametrize("stride,padding,kernel", [(1, 0, 3), (1, 1, 3), (2, 1, 3), (2, 0, 2), (1, 2, 5)])
def test_conv2d_matches_direct_reference_and_gradcheck(stride: int, padding: int, kernel: int) -> None:
    conv = nn.Conv2d(2, 3, kernel, stride=stride, padding=padding).double()
    x = leaf(2, 2, 7, 6)
    y = conv(x)
    expected = conv_reference(x.numpy(), conv.weight.numpy(), conv.bias.numpy(), stride, padding)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-10, atol=1e-10)
    check_module_gradients(conv, x)


def test_conv_and_pool_match_torch() -> None:
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    dy_conv = rng.standard_normal((2, 4, 5, 4)).astype(np.float32)
    conv = nn.Conv2d(3, 4, 3, stride=2, padding=1)
    tconv = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)
    tconv.load_state_dict({k: torch.tensor(v.numpy()) for k, v in conv.state_dict().items()})
    xt, tx = tn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    conv(xt).backward(tn.tensor(dy_conv))
    tconv(tx).backward(torch.tensor(dy_conv))
    np.testing.assert_allclose(xt.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(conv.weight.grad.numpy(), tconv.weight.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(conv.bias.grad.numpy(), tconv.bias.grad.numpy(), rtol=1e-4, atol=1e-4)
    for ours, theirs in ((nn.MaxPool2d(3, 2, 1), torch.nn.MaxPool2d(3, 2, 1)), (nn.AvgPool2d(2), torch.nn.AvgPool2d(2))):
        xt, tx = tn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        y, ty = ours(xt), theirs(tx)
        np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-7)
        dy = rng.standard_normal(y.shape).astype(np.float32)
        y.backward(tn.tensor(dy))
        ty.backward(torch.tensor(dy))
        np.testing.assert_allclose(xt.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pool", [nn.MaxPool2d(2), nn.MaxPool2d(3, stride=2, padding=1), nn.AvgPool2d(2), nn.AvgPool2d(3, 1, 1), nn.AdaptiveAvgPool2d(1)])
def test_pooling_gradcheck(pool: nn.Module) -> None:
    x = tn.tensor(rng.permutation(2 * 3 * 6 * 6).reshape(2, 3, 6, 6) * 0.1, dtype=tn.float64, requires_grad=True)
    assert gradcheck(pool, (x,))  # distinct values: no ties at which max pooling has a kink


def test_max_pool_matches_numpy_reference() -> None:
    x = rng.standard_normal((2, 2, 6, 6))
    y = nn.MaxPool2d(2)(tn.tensor(x)).numpy()
    np.testing.assert_array_equal(y, x.reshape(2, 2, 3, 2, 3, 2).max(axis=(3, 5)))


@pytest.mark.parametrize("causal", [True, False])
def test_attention_gradcheck(causal: bool) -> None:
    attention = nn.MultiheadSelfAttention(8, 2, causal=causal)
    check_module_gradients(attention, leaf(2, 4, 8))


def attention_reference(attention: nn.MultiheadSelfAttention, x: np.ndarray) -> np.ndarray:
    """Single-head-at-a-time attention written directly in numpy (float64)."""
    b, t, d = x.shape
    h = attention.n_heads
    qkv = x @ attention.qkv.weight.numpy().T + attention.qkv.bias.numpy()
    q, k, v = np.split(qkv, 3, axis=-1)
    out = np.zeros_like(x)
    size = d // h
    for head in range(h):
        cols = slice(head * size, (head + 1) * size)
        scores = q[..., cols] @ np.swapaxes(k[..., cols], 1, 2) / np.sqrt(size)
        if attention.causal:
            scores = np.where(np.tril(np.ones((t, t))) > 0, scores, -np.inf)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        out[..., cols] = weights @ v[..., cols]
    return out @ attention.proj.weight.numpy().T + attention.proj.bias.numpy()


def test_attention_matches_reference_and_is_causal() -> None:
    attention = nn.MultiheadSelfAttention(8, 2, causal=True).double()
    x = rng.standard_normal((2, 5, 8))
    y = attention(tn.tensor(x)).numpy()
    np.testing.assert_allclose(y, attention_reference(attention, x), rtol=1e-10, atol=1e-12)
    changed = x.copy()
    changed[:, 3:] += rng.standard_normal((2, 2, 8))  # change the future tokens 3 and 4
    y_changed = attention(tn.tensor(changed)).numpy()
    np.testing.assert_allclose(y_changed[:, :3], y[:, :3], rtol=1e-12, atol=1e-12)
    assert np.abs(y_changed[:, 3:] - y[:, 3:]).max() > 1e-3


def test_placement_formulas() -> None:
    sublayer, norm = nn.Linear(6, 6).double(), nn.LayerNorm(6).double()
    x = tn.tensor(rng.standard_normal((3, 6)))
    pre = nn.Residual(sublayer, norm, "pre")(x).numpy()
    post = nn.Residual(sublayer, norm, "post")(x).numpy()
    np.testing.assert_allclose(pre, (x + sublayer(norm(x))).numpy(), rtol=1e-12)
    np.testing.assert_allclose(post, norm(x + sublayer(x)).numpy(), rtol=1e-12)
    assert np.abs(pre - post).max() > 1e-3
    np.testing.assert_allclose(nn.Residual(sublayer)(x).numpy(), (x + sublayer(x)).numpy(), rtol=1e-12)


@pytest.mark.parametrize("placement", ["pre", "post"])
@pytest.mark.parametrize("norm", [nn.LayerNorm(6), nn.RMSNorm(6), nn.BatchNorm1d(6), None])
def test_residual_gradcheck_with_any_norm(placement: str, norm: nn.Module | None) -> None:
    block = nn.Residual(nn.MLPBlock(6, 8), norm, placement)
    check_module_gradients(block, leaf(4, 6))


@pytest.mark.parametrize("norm", ["batchnorm", "groupnorm", "layernorm", "instancenorm", "none"])
def test_conv_block_gradcheck(norm: str) -> None:
    block = nn.ConvBlock(4, norm, groups=2)
    check_module_gradients(block, leaf(2, 4, 4, 4), atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("placement", ["pre", "post"])
def test_transformer_block_gradcheck(placement: str) -> None:
    block = nn.TransformerBlock(8, 2, "layernorm", placement)
    check_module_gradients(block, leaf(1, 3, 8))


def test_clear_errors() -> None:
    with pytest.raises(RuntimeError, match="3 channels"):  # PyTorch's error types and messages
        nn.Conv2d(3, 4, 3)(tn.randn(1, 2, 5, 5))
    with pytest.raises(RuntimeError, match="Kernel size"):
        nn.Conv2d(1, 1, 5)(tn.randn(1, 1, 3, 3))
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadSelfAttention(10, 3)
    with pytest.raises(ValueError, match="placement"):
        nn.Residual(nn.Identity(), None, "middle")
    with pytest.raises(ValueError, match="placement"):
        TinyTransformerLM(10, placement="sandwich")
    with pytest.raises(ValueError, match="norm"):
        SmallCNN(norm="weirdnorm")


def test_small_models_shapes() -> None:
    assert SmallMLP(norm="layernorm")(tn.randn(5, 1, 8, 8)).shape == (5, 10)
    assert ResidualMLP(64, 16, 3, 10, "rmsnorm", "post")(tn.randn(5, 64)).shape == (5, 10)
    assert SmallCNN("instancenorm")(tn.randn(3, 1, 28, 28)).shape == (3, 10)


def test_small_cnn_learns_digits() -> None:
    tn.manual_seed(0)
    x_train, y_train, x_test, y_test = tn.data.load_digits()
    model = SmallCNN(norm="batchnorm")
    optimizer = tn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(8):
        for xb, yb in tn.data.minibatches(x_train, y_train, batch_size=32, rng=epoch):
            loss = F.cross_entropy(model(tn.tensor(xb)), tn.tensor(yb))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    with tn.no_grad():
        accuracy = (model(tn.tensor(x_test)).argmax(1).numpy() == y_test).mean()
    assert accuracy >= 0.95, accuracy


def test_tiny_transformer_overfits_short_text() -> None:
    tn.manual_seed(0)
    text = "the quick brown fox jumps over the lazy dog. " * 3
    tokenizer = tn.data.CharTokenizer(text)
    ids = tokenizer.encode(text)
    model = TinyTransformerLM(tokenizer.vocab_size, d_model=32, n_heads=4, n_layers=2, block_size=32)
    optimizer = tn.optim.Adam(model.parameters(), lr=3e-3)
    starts = np.arange(0, len(ids) - 33, 4)
    x = tn.tensor(np.stack([ids[s:s + 32] for s in starts]))
    y = tn.tensor(np.stack([ids[s + 1:s + 33] for s in starts]))
    first = None
    for _ in range(150):
        loss = F.cross_entropy(model(x).reshape(-1, tokenizer.vocab_size), y.reshape(-1))
        first = first if first is not None else loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert first > 2.5 and loss.item() < 0.3, (first, loss.item())


def test_tiny_transformer_gradients_including_the_position_table() -> None:
    """Every parameter's gradient by finite differences (float64, random upstream gradient), with fewer
    tokens than ``block_size``: the position rows past T take no gradient, those before T take what an
    ``arange(T)`` lookup would give (the forward slices the table)."""
    tn.manual_seed(0)
    model = TinyTransformerLM(vocab=7, d_model=8, n_heads=2, n_layers=1, block_size=6).double()
    ids = tn.tensor(np.random.default_rng(1).integers(0, 7, size=(2, 4)))
    assert gradcheck(lambda *ps: model(ids), tuple(params_of(model)))
    model.zero_grad()
    model(ids).backward(tn.randn(2, 4, 7, dtype=tn.float64))
    position_grad = model.position_embedding.weight.grad.numpy()
    assert np.all(position_grad[4:] == 0) and np.all(np.abs(position_grad[:4]).sum(axis=1) > 0)


@pytest.mark.parametrize("pooled_stage, last_length", [(False, 5), (True, 1)])
def test_signal_cnn_stages_halve_the_length(pooled_stage: bool, last_length: int) -> None:
    tn.manual_seed(0)
    model = SignalCNN(norm="batchnorm", width=4, stages=4, pooled_stage=pooled_stage)
    x = tn.tensor(rng.standard_normal((3, 40)).astype(np.float32))
    assert model(x).shape == (3, 10)
    # the last BatchNorm normalizes (N, 32, 1, last_length) maps: its running mean moved, per channel
    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    assert norms[-1].num_features == 32 and norms[0].num_features == 4
    h = x.reshape(3, 1, 1, 40)
    for layer in model.body:
        h = layer(h)
    assert h.shape == (3, 32, 1, last_length)
    with pytest.raises(ValueError, match="signals"):
        model(tn.tensor(np.zeros((3, 1, 40), np.float32)))


@pytest.mark.parametrize("norm", ["batchnorm", "groupnorm", "none"])
def test_zero_init_residual_starts_every_residual_block_as_the_identity(norm: str) -> None:
    from tinynorm.nn.blocks import ConvBlock

    for build in (lambda zero: SmallCNN(norm=norm, width=4, zero_init_residual=zero),
                  lambda zero: SignalCNN(norm=norm, width=4, stages=3, zero_init_residual=zero)):
        tn.manual_seed(0)
        model = build(True).eval()
        blocks = [m for m in model.modules() if isinstance(m, ConvBlock)]
        assert blocks
        for block in blocks:
            if norm != "none":
                np.testing.assert_array_equal(block.norm2.weight.numpy(), 0.0)
                np.testing.assert_array_equal(block.norm1.weight.numpy(), 1.0)  # only the last norm
            shape = (2, block.conv1.in_channels, 1, 6)
            x = tn.tensor(np.abs(rng.standard_normal(shape)).astype(np.float32))  # relu(x) == x
            if norm == "none":  # no weight to zero: the block stays an ordinary one
                assert not np.allclose(block(x).numpy(), x.numpy())
            else:
                np.testing.assert_allclose(block(x).numpy(), x.numpy(), rtol=1e-6)
        tn.manual_seed(0)
        assert all(m.norm2.weight.numpy().min() == 1.0 for m in build(False).modules()
                   if isinstance(m, ConvBlock) and norm != "none")


def test_signal_cnn_gradcheck() -> None:
    tn.manual_seed(1)
    check_module_gradients(SignalCNN(norm="groupnorm", width=4, stages=2), leaf(2, 12), atol=1e-5, rtol=1e-3)


def test_fairseq_init_scales_tokens_and_adds_sinusoids() -> None:
    tn.manual_seed(0)
    model = TinyTransformerLM(vocab=50, d_model=64, n_heads=4, n_layers=1, block_size=16, init="fairseq")
    table = sinusoidal_positions(16, 64)
    np.testing.assert_allclose(table[3, :32], np.sin(3 * np.exp(-np.log(1e4) * np.arange(32) / 31)), rtol=1e-5)
    np.testing.assert_allclose(table[:, 32:] ** 2 + table[:, :32] ** 2, 1.0, rtol=1e-5)
    weight = model.token_embedding.weight.numpy()
    assert abs(weight.std() * 8 - 1.0) < 0.05  # N(0, 1/d) times sqrt(d): unit variance per coordinate
    assert "position_table" not in model.state_dict() and not hasattr(model, "position_embedding")
    gpt2 = TinyTransformerLM(vocab=50, d_model=64, n_heads=4, n_layers=1, block_size=16)
    assert abs(gpt2.token_embedding.weight.numpy().std() - 0.02) < 0.002
    with pytest.raises(ValueError, match="init must be one of"):
        TinyTransformerLM(vocab=50, init="bert")
