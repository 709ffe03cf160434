"""Recurrent layers and cells against PyTorch (same weights, float64), the fused cell ops against finite
differences, the LayerNorm-LSTM against a numpy reference of Ba et al.'s equations, and the errors."""
import math
import warnings

import numpy as np
import pytest

import tinynorm
from tinynorm import nn
from tinynorm.autograd import gradcheck
from tinynorm.ops import recurrent

from helpers import leaf

torch = pytest.importorskip("torch")

LAYERS = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2, "bidirectional": True}),
    ("RNN", {"bias": False, "batch_first": True}),
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", {"proj_size": 2, "num_layers": 2, "bidirectional": True}),
    ("LSTM", {"bias": False}),
    ("GRU", {"num_layers": 3}),
    ("GRU", {"bidirectional": True, "bias": False, "batch_first": True}),
]


def to_torch(value):
    return torch.tensor(np.asarray(value))


def pair(kind, kwargs, input_size=4, hidden_size=3):
    """A tinynorm layer and a PyTorch one holding the tinynorm layer's (float64) weights."""
    ours = getattr(nn, kind)(input_size, hidden_size, dtype=tinynorm.float64, **kwargs)
    theirs = getattr(torch.nn, kind)(input_size, hidden_size, dtype=torch.float64, **kwargs)
    theirs.load_state_dict({name: to_torch(value) for name, value in ours.state_dict().items()})
    return ours, theirs


def flat(outputs):
    """(output, h_n) or (output, (h_n, c_n)) as a flat list."""
    output, state = outputs
    return [output, *(state if isinstance(state, tuple) else (state,))]


def as_hx(states):
    """The ``hx`` argument for a list of initial states: None, one tensor, or an LSTM's (h_0, c_0)."""
    return None if not states else (tuple(states) if len(states) == 2 else states[0])


def compare_forward_backward(ours, theirs, inputs, seed=0):
    """Outputs of both, then gradients of <v, outputs> for random v w.r.t. every input and parameter."""
    rng = np.random.default_rng(seed)
    mine = [leaf(x) for x in inputs]
    reference = [to_torch(x).requires_grad_() for x in inputs]
    out, tout = flat(ours(mine[0], as_hx(mine[1:]))), flat(theirs(reference[0], as_hx(reference[1:])))
    assert [tuple(o.shape) for o in out] == [tuple(t.shape) for t in tout]
    upstream = [rng.normal(size=o.shape) for o in out]
    total = sum((o * tinynorm.tensor(v)).sum() for o, v in zip(out, upstream))
    total.backward()
    sum((t * to_torch(v)).sum() for t, v in zip(tout, upstream)).backward()
    for o, t in zip(out, tout):
        np.testing.assert_allclose(o.numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
    for m, r in zip(mine, reference):
        np.testing.assert_allclose(m.grad.numpy(), r.grad.numpy(), rtol=1e-9, atol=1e-12)
    their_params = dict(theirs.named_parameters())
    for name, param in ours.named_parameters():
        np.testing.assert_allclose(param.grad.numpy(), their_params[name].grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=name)


@pytest.mark.parametrize("kind, kwargs", LAYERS, ids=lambda v: v if isinstance(v, str) else str(v))
def test_layer_outputs_and_gradients_equal_pytorch(kind, kwargs):
    ours, theirs = pair(kind, kwargs)
    rng = np.random.default_rng(1)
    batch_first = kwargs.get("batch_first", False)
    x = rng.normal(size=(2, 5, 4) if batch_first else (5, 2, 4))
    compare_forward_backward(ours, theirs, [x])
    # with initial states (which get gradients too)
    count = ours.num_layers * ours.num_directions
    states = [rng.normal(size=(count, 2, size)) for size in ours._state_sizes()]
    compare_forward_backward(ours, theirs, [x, *states], seed=2)


@pytest.mark.parametrize("kind, kwargs", [LAYERS[1], LAYERS[5], LAYERS[8]], ids=["RNN", "LSTM", "GRU"])
def test_unbatched_input_equals_pytorch(kind, kwargs):
    ours, theirs = pair(kind, kwargs)
    rng = np.random.default_rng(3)
    compare_forward_backward(ours, theirs, [rng.normal(size=(6, 4))])
    count = ours.num_layers * ours.num_directions
    states = [rng.normal(size=(count, size)) for size in ours._state_sizes()]
    compare_forward_backward(ours, theirs, [rng.normal(size=(6, 4)), *states])


def test_dropout_between_layers_only_in_training():
    ours, theirs = pair("GRU", {"num_layers": 2, "dropout": 1.0})
    x = np.random.default_rng(4).normal(size=(4, 3, 4))
    for training in (True, False):  # dropout 1 zeroes the first layer's output: deterministic
        ours.train(training)
        theirs.train(training)
        np.testing.assert_allclose(ours(tinynorm.tensor(x))[0].numpy(), theirs(to_torch(x))[0].detach().numpy(),
                                   rtol=1e-10)
    ours.train()
    tinynorm.manual_seed(0)
    ours.dropout = 0.5
    a = ours(tinynorm.tensor(x))[0].numpy()
    assert not np.allclose(a, ours(tinynorm.tensor(x))[0].numpy())  # a fresh mask per call


def test_state_dict_loads_from_pytorch_and_keeps_pytorchs_names():
    theirs = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2, dtype=torch.float64)
    ours = nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2, dtype=tinynorm.float64)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.load_state_dict(theirs.state_dict()) == ([], [])
    for name, value in theirs.state_dict().items():
        np.testing.assert_array_equal(ours.state_dict()[name].numpy(), value.numpy())
    assert [[tuple(p.shape) for p in group] for group in ours.all_weights] == \
           [[tuple(p.shape) for p in group] for group in theirs.all_weights]


@pytest.mark.parametrize("kind, gates", [("RNN", 1), ("LSTM", 4), ("GRU", 3)])
def test_initialisation_is_uniform_in_plus_minus_one_over_sqrt_hidden(kind, gates):
    layer = getattr(nn, kind)(20, 64)
    values = np.concatenate([p.numpy().ravel() for p in layer.parameters()])
    bound = 1 / math.sqrt(64)
    assert values.size == gates * 64 * (20 + 64 + 2)
    assert np.abs(values).max() <= bound and np.abs(values).max() > 0.99 * bound
    assert abs(values.mean()) < 0.02 * bound and np.std(values) == pytest.approx(bound / math.sqrt(3), rel=0.02)


def test_reprs_match_pytorch():
    cases = [("LSTM", (10, 20, 2), {"batch_first": True, "dropout": 0.5, "bidirectional": True, "proj_size": 5,
                                    "bias": False}),
             ("RNN", (10, 20, 2, "relu", False), {}), ("GRU", (3, 4), {})]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind, args, kwargs in cases:
            assert repr(getattr(nn, kind)(*args, **kwargs)) == repr(getattr(torch.nn, kind)(*args, **kwargs))
        for kind, args in (("RNNCell", (10, 20, False, "relu")), ("LSTMCell", (3, 4)), ("GRUCell", (3, 4, False))):
            assert repr(getattr(nn, kind)(*args)) == repr(getattr(torch.nn, kind)(*args))
    assert nn.RNN(3, 4, 1, "relu").nonlinearity == "relu"


# ------------------------------------------------------------------------------------- cells
@pytest.mark.parametrize("kind, kwargs", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu", "bias": False}),
                                          ("LSTMCell", {}), ("GRUCell", {}), ("GRUCell", {"bias": False})])
@pytest.mark.parametrize("batched", [True, False])
def test_cells_equal_pytorch(kind, kwargs, batched):
    ours = getattr(nn, kind)(4, 3, dtype=tinynorm.float64, **kwargs)
    theirs = getattr(torch.nn, kind)(4, 3, dtype=torch.float64, **kwargs)
    theirs.load_state_dict({k: to_torch(v) for k, v in ours.state_dict().items()})
    rng = np.random.default_rng(5)
    shape = (2,) if batched else ()
    x = rng.normal(size=shape + (4,))
    states = [rng.normal(size=shape + (3,)) for _ in range(2 if kind == "LSTMCell" else 1)]
    for given in ([], states):  # zeros, then explicit states
        mine = [leaf(v) for v in [x, *given]]
        reference = [to_torch(v).requires_grad_() for v in [x, *given]]
        out, tout = ours(mine[0], as_hx(mine[1:])), theirs(reference[0], as_hx(reference[1:]))
        out, tout = (out, tout) if kind == "LSTMCell" else ((out,), (tout,))
        upstream = [rng.normal(size=o.shape) for o in out]
        sum((o * tinynorm.tensor(v)).sum() for o, v in zip(out, upstream)).backward()
        sum((t * to_torch(v)).sum() for t, v in zip(tout, upstream)).backward()
        for o, t in zip(out, tout):
            np.testing.assert_allclose(o.numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
            if batched:  # PyTorch's node names (LSTMCell: Mul, Add); unbatched ones end with squeeze's
                assert o.grad_fn.name() == t.grad_fn.name()
        for m, r in zip(mine, reference):
            np.testing.assert_allclose(m.grad.numpy(), r.grad.numpy(), rtol=1e-9, atol=1e-12)
        for name, param in ours.named_parameters():
            np.testing.assert_allclose(param.grad.numpy(), dict(theirs.named_parameters())[name].grad.numpy(),
                                       rtol=1e-9, atol=1e-12)
            param.grad = None
        theirs.zero_grad()


def test_fused_cell_ops_pass_gradcheck():
    rng = np.random.default_rng(6)
    gates, c = leaf(rng.normal(size=(3, 8))), leaf(rng.normal(size=(3, 2)))
    assert gradcheck(recurrent.lstm_cell_state, (gates, c))
    gru_inputs = (leaf(rng.normal(size=(3, 6))), leaf(rng.normal(size=(3, 6))), leaf(rng.normal(size=(3, 2))))
    assert gradcheck(lambda a, b, s: recurrent.GRUCellState.apply(a, b, s), gru_inputs)


# -------------------------------------------------------------------------- LayerNorm-LSTM
def numpy_layer_norm_lstm_step(x, h, c, p, eps=1e-5):
    """Ba et al. 2016, eq. 20-22, in float64 numpy."""
    def ln(v, gain, shift=0.0):
        mean, var = v.mean(-1, keepdims=True), v.var(-1, keepdims=True)
        return (v - mean) / np.sqrt(var + eps) * gain + shift

    def sig(v):
        return 1 / (1 + np.exp(-v))

    gates = ln(x @ p["weight_ih"].T, p["norm_ih"]) + ln(h @ p["weight_hh"].T, p["norm_hh"]) + p["bias"]
    i, f, g, o = np.split(gates, 4, axis=-1)
    c = sig(f) * c + sig(i) * np.tanh(g)
    return sig(o) * np.tanh(ln(c, p["norm_cell_weight"], p["norm_cell_bias"])), c


def randomize(module, rng):
    with tinynorm.no_grad():  # away from the initial gains of 1, so that they matter
        for param in module.parameters():
            param.copy_(tinynorm.tensor(rng.normal(size=param.shape), dtype=param.dtype))


def test_layer_norm_lstm_cell_follows_ba_et_al():
    rng = np.random.default_rng(7)
    cell = nn.LayerNormLSTMCell(4, 3, dtype=tinynorm.float64)
    randomize(cell, rng)
    params = {name: p.numpy() for name, p in cell.named_parameters()}
    x, h, c = rng.normal(size=(2, 4)), rng.normal(size=(2, 3)) * 10, rng.normal(size=(2, 3))
    got_h, got_c = cell(tinynorm.tensor(x), (tinynorm.tensor(h), tinynorm.tensor(c)))
    want_h, want_c = numpy_layer_norm_lstm_step(x, h, c, params)
    np.testing.assert_allclose(got_h.numpy(), want_h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_c.numpy(), want_c, rtol=1e-12, atol=1e-12)
    # scaling h scales W_hh h, which its LayerNorm undoes: the step does not depend on h's scale
    scaled, _ = cell(tinynorm.tensor(x), (tinynorm.tensor(h * 100), tinynorm.tensor(c)))
    np.testing.assert_allclose(scaled.numpy(), want_h, rtol=1e-8)
    inputs = (leaf(x), leaf(h), leaf(c), *(leaf(p) for p in params.values()))
    assert gradcheck(lambda x, h, c, *p: recurrent.layer_norm_lstm_cell(x, h, c, *p), inputs)


def test_layer_norm_lstm_layer_is_its_cell_unrolled():
    rng = np.random.default_rng(8)
    layer = nn.LayerNormLSTM(4, 3, num_layers=2, bidirectional=True, batch_first=True, dtype=tinynorm.float64)
    randomize(layer, rng)
    x = rng.normal(size=(2, 5, 4))
    output, (h_n, c_n) = layer(tinynorm.tensor(x))
    assert output.shape == (2, 5, 6) and h_n.shape == c_n.shape == (4, 2, 3)
    inputs = x
    for layer_index in range(2):
        directions = []
        for direction, suffix in enumerate(("", "_reverse")):
            p = {name[:-len(f"_l{layer_index}{suffix}")]: v.numpy() for name, v in layer.named_parameters()
                 if name.endswith(f"_l{layer_index}{suffix}")}
            h, c, outs = np.zeros((2, 3)), np.zeros((2, 3)), [None] * 5
            for t in (range(5) if direction == 0 else reversed(range(5))):
                h, c = numpy_layer_norm_lstm_step(inputs[:, t], h, c, p)
                outs[t] = h
            np.testing.assert_allclose(h_n.numpy()[2 * layer_index + direction], h, rtol=1e-10)
            np.testing.assert_allclose(c_n.numpy()[2 * layer_index + direction], c, rtol=1e-10)
            directions.append(np.stack(outs, axis=1))
        inputs = np.concatenate(directions, axis=-1)
    np.testing.assert_allclose(output.numpy(), inputs, rtol=1e-10)
    names = [name for name, _ in layer.named_parameters()][:7]
    assert names == ["weight_ih_l0", "weight_hh_l0", "bias_l0", "norm_ih_l0", "norm_hh_l0", "norm_cell_weight_l0",
                     "norm_cell_bias_l0"]
    fresh = nn.LayerNormLSTM(4, 3)
    assert np.all(fresh.norm_ih_l0.numpy() == 1) and np.all(fresh.norm_cell_bias_l0.numpy() == 0)


def test_layer_norm_lstm_without_bias_and_unbatched():
    layer = nn.LayerNormLSTM(4, 3, bias=False, dtype=tinynorm.float64)
    assert "bias_l0" not in dict(layer.named_parameters())
    x = leaf(np.random.default_rng(9).normal(size=(3, 4)))
    out, (h, c) = layer(x)
    assert out.shape == (3, 3) and h.shape == c.shape == (1, 3)
    np.testing.assert_allclose(out.numpy()[-1], h.numpy()[0])
    assert gradcheck(lambda v: layer(v)[0], (x,))


# -------------------------------------------------------------------------------- errors
def test_constructor_errors_are_pytorchs():
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'. Select from 'tanh' or 'relu'."):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(TypeError, match="hidden_size should be of type int, got: float"):
        nn.LSTM(3, 2.0)
    with pytest.raises(ValueError, match="num_layers must be greater than zero"):
        nn.GRU(3, 4, 0)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(3, 4, dropout=1.5)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.5)
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="proj_size should be a positive integer or zero"):
        nn.LSTM(3, 4, proj_size=-1)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNNCell(3, 4, nonlinearity="gelu")


def test_forward_errors_name_what_was_received():
    rnn, lstm = nn.RNN(4, 3, 2), nn.LSTM(4, 3, 2)
    with pytest.raises(ValueError, match="RNN: Expected input to be 2D or 3D, got 4D tensor instead"):
        rnn(tinynorm.randn(2, 3, 4, 5))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 4, got 7"):
        rnn(tinynorm.randn(5, 2, 7))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx should also be 3-D but got 2-D tensor"):
        rnn(tinynorm.randn(5, 2, 4), tinynorm.randn(2, 3))
    with pytest.raises(RuntimeError, match="For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"):
        rnn(tinynorm.randn(5, 4), tinynorm.randn(2, 1, 3))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(2, 2, 3\), got \[2, 3, 3\]"):
        rnn(tinynorm.randn(5, 2, 4), tinynorm.randn(2, 3, 3))
    with pytest.raises(ValueError, match=r"RNN input dtype \(tinynorm.float64\) does not match weight dtype \(tinynorm.float32\)"):
        rnn(tinynorm.randn(5, 2, 4, dtype=tinynorm.float64))
    with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0"):
        rnn(tinynorm.randn(0, 2, 4))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(2, 2, 3\), got \[2, 2, 4\]"):
        lstm(tinynorm.randn(5, 2, 4), (tinynorm.randn(2, 2, 3), tinynorm.randn(2, 2, 4)))
    with pytest.raises(TypeError, match=r"LSTM: hx must be a tuple \(h_0, c_0\)"):
        lstm(tinynorm.randn(5, 2, 4), tinynorm.randn(2, 2, 3))
    with pytest.raises(TypeError, match="packed sequences are not supported"):
        lstm(np.zeros((5, 2, 4)))
    cell = nn.GRUCell(4, 3)
    with pytest.raises(ValueError, match="GRUCell: Expected input to be 1D or 2D, got 3D instead"):
        cell(tinynorm.randn(2, 2, 4))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 expected 4"):
        cell(tinynorm.randn(2, 5))
    with pytest.raises(RuntimeError, match="Input batch size 2 doesn't match hidden0 batch size 3"):
        cell(tinynorm.randn(2, 4), tinynorm.randn(3, 3))
    with pytest.raises(RuntimeError, match="hidden0 has inconsistent hidden_size: got 5, expected 3"):
        cell(tinynorm.randn(2, 4), tinynorm.randn(2, 5))
    with pytest.raises(RuntimeError, match="GRUCell input dtype"):
        cell(tinynorm.randn(2, 4, dtype=tinynorm.float64))
    with pytest.raises(RuntimeError, match="hidden1 has inconsistent hidden_size: got 4, expected 3"):
        nn.LSTMCell(4, 3)(tinynorm.randn(2, 4), (tinynorm.randn(2, 3), tinynorm.randn(2, 4)))
    with pytest.raises(TypeError, match=r"LSTMCell: hx must be a tuple \(h, c\)"):
        nn.LSTMCell(4, 3)(tinynorm.randn(2, 4), tinynorm.randn(2, 3))


def test_an_empty_batch_gives_empty_outputs():
    output, h_n = nn.GRU(4, 3, 2)(tinynorm.randn(5, 0, 4))
    assert output.shape == (5, 0, 3) and h_n.shape == (2, 0, 3)


# ------------------------------------------------------------------------------------ training
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "LayerNormLSTM"])
def test_a_recurrent_layer_learns_to_recall_the_input_three_steps_back(kind):
    """Memory through time: predict the bit seen 3 steps earlier (chance: 50%)."""
    tinynorm.manual_seed(0)
    layer, head = getattr(nn, kind)(1, 16, batch_first=True), nn.Linear(16, 2)
    optimizer = tinynorm.optim.Adam(list(layer.parameters()) + list(head.parameters()), lr=0.02)
    rng = np.random.default_rng(0)

    def batch():
        bits = rng.integers(0, 2, (32, 12))
        return tinynorm.tensor(bits[..., None].astype(np.float32)), bits[:, :-3], bits

    for _ in range(80):
        x, target, _ = batch()
        logits = head(layer(x)[0][:, 3:])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 2), tinynorm.tensor(target.reshape(-1)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    x, target, _ = batch()
    with tinynorm.no_grad():
        accuracy = np.mean(head(layer(x)[0][:, 3:]).numpy().argmax(-1) == target)
    assert accuracy > 0.95
