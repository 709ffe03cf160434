"""The tensor semantics PyTorch scripts rely on, against PyTorch: in-place ops and augmented assignment,
version counters, views, ``.data``, type promotion, ``autograd.grad``, hooks and node names.

Each test takes a ``device``; ``tests/cuda/sim_tensor_semantics.py`` runs the same tests on ``'cuda'``
in Numba's CUDA simulator. Values are compared with PyTorch's (skipped cleanly without it); gradients
use a fixed random upstream gradient, never ``out.sum()``.
"""
import re

import numpy as np
import pytest

import tinynorm as tn

torch = pytest.importorskip("torch")


@pytest.fixture(params=["cpu"])
def device(request):
    return request.param


def run(lib, device, fn):
    """``fn(lib, make)`` where ``make(values, **kwargs)`` builds a tensor of ``lib`` on the device; the
    result, or ``(type, message)`` of the error it raised."""
    def make(values, **kwargs):
        if lib is tn:
            return tn.tensor(values, device=device, **kwargs)
        return torch.tensor(values, **kwargs)

    try:
        return fn(lib, make)
    except (RuntimeError, TypeError, ValueError, IndexError) as error:
        return type(error), str(error)


def plain(value):
    """Tensors (and nests of them) as numpy arrays, for comparing the two libraries' results."""
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, tn.Tensor):
        return value.numpy()
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    return value


def is_error(result):
    return isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], type) and issubclass(result[0], Exception)


def assert_close(ours, theirs, rtol):
    """Equal results: numbers and arrays within ``rtol``, nests element by element, anything else equal."""
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs), (ours, theirs)
        for a, b in zip(ours, theirs):
            assert_close(a, b, rtol)
    elif isinstance(theirs, (np.ndarray, float, int, np.generic)) and not isinstance(theirs, bool):
        np.testing.assert_allclose(np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float), rtol=rtol, atol=1e-6)
    else:
        assert ours == theirs


def assert_same(fn, device, rtol=1e-6):
    """Run ``fn`` with both libraries: the same results, or the same error class (whose message, ours,
    is returned for the test to check)."""
    ours, theirs = run(tn, device, fn), run(torch, device, fn)
    if is_error(theirs):
        assert is_error(ours) and ours[0] is theirs[0], f"PyTorch raised {theirs}, tinynorm gave {ours}"
        return ours[1]
    assert not is_error(ours), f"tinynorm raised {ours}"
    assert_close(plain(ours), plain(theirs), rtol)


UPSTREAM = np.array([[0.3, -1.2, 0.7], [2.0, 0.1, -0.4]])


# --------------------------------------------------------------------------------- in place
IN_PLACE = {
    "add_": lambda t, o: t.add_(o), "add_ alpha": lambda t, o: t.add_(o, alpha=-2.0),
    "sub_": lambda t, o: t.sub_(o), "mul_": lambda t, o: t.mul_(o), "div_": lambda t, o: t.div_(o),
    "pow_": lambda t, o: t.abs_().pow_(o), "+=": lambda t, o: t.__iadd__(o), "-=": lambda t, o: t.__isub__(o),
    "*=": lambda t, o: t.__imul__(o), "/=": lambda t, o: t.__itruediv__(o), "**=": lambda t, o: t.abs_().__ipow__(o),
    "clamp_": lambda t, o: t.clamp_(-0.5, 0.5), "clamp_min_": lambda t, o: t.clamp_min_(0.1),
    "clamp_max_": lambda t, o: t.clamp_max_(0.1), "neg_": lambda t, o: t.neg_(), "exp_": lambda t, o: t.exp_(),
    "log_": lambda t, o: t.abs_().log_(), "sqrt_": lambda t, o: t.abs_().sqrt_(), "abs_": lambda t, o: t.abs_(),
    "tanh_": lambda t, o: t.tanh_(), "sigmoid_": lambda t, o: t.sigmoid_(), "relu_": lambda t, o: t.relu_(),
    "masked_fill_": lambda t, o: t.masked_fill_(o > 0, -3.0), "copy_": lambda t, o: t.copy_(o),
    "zero_": lambda t, o: t.zero_(), "fill_": lambda t, o: t.fill_(2.5),
}


@pytest.mark.parametrize("name", IN_PLACE)
def test_in_place_op_writes_into_the_tensor_and_its_aliases(name, device):
    def fn(lib, make):
        x = make([[0.5, -1.5, 2.0], [1.0, -0.25, 3.0]])
        alias, view = x, x[1]
        result = IN_PLACE[name](x, make([0.5, 2.0, -1.0]))
        assert result is x and alias is x
        return x, view, x._version > 0

    assert_same(fn, device)


@pytest.mark.parametrize("name", [n for n in IN_PLACE if n not in ("zero_", "fill_")])
def test_in_place_op_on_a_non_leaf_is_recorded(name, device):
    """The write becomes part of the graph: gradients equal PyTorch's, to both inputs."""
    def fn(lib, make):
        a = make([[0.5, -1.5, 2.0], [1.0, -0.25, 3.0]], requires_grad=True)
        b = make([0.5, 2.0, -1.0], requires_grad=True)
        h = a * 1.5
        IN_PLACE[name](h, b * 1.0)
        h.backward(make(UPSTREAM.tolist()))
        return h, a.grad, b.grad if b.grad is not None else lib.zeros(3)

    assert_same(fn, device)


def test_fill_and_zero_give_the_old_values_a_zero_gradient(device):
    def fn(lib, make):
        a = make([1.0, 2.0], requires_grad=True)
        h = a * 3
        h.fill_(1.0)
        (h * make([2.0, 5.0])).sum().backward()
        return a.grad

    assert_same(fn, device)


def test_writing_a_leaf_that_requires_grad_raises_unless_under_no_grad(device):
    def fn(lib, make):
        w = make([1.0, 2.0], requires_grad=True)
        w += 1

    message = assert_same(fn, device)
    assert "leaf Variable that requires grad" in message

    def under_no_grad(lib, make):
        w = make([1.0, 2.0], requires_grad=True)
        with lib.no_grad():
            w -= 0.5 * make([1.0, 1.0])
            w[0] = 10.0
        return w, w.requires_grad, w.is_leaf

    assert_same(under_no_grad, device)


def test_writing_a_view_of_a_leaf_raises(device):
    def fn(lib, make):
        w = make([1.0, 2.0], requires_grad=True)
        w[0] = 1.0

    assert "a view of a leaf Variable" in assert_same(fn, device)


@pytest.mark.parametrize("case", ["int /= 2", "int += 0.5", "bool += 1", "broadcast grows", "expanded"])
def test_in_place_refuses_what_pytorch_refuses(case, device):
    def fn(lib, make):
        if case == "int /= 2":
            x = make([1, 2])
            x /= 2
        elif case == "int += 0.5":
            x = make([1, 2])
            x += 0.5
        elif case == "bool += 1":
            x = make([True, False])
            x += 1
        elif case == "broadcast grows":
            x = make([1.0, 2.0, 3.0])
            x += make([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        else:
            x = make([1.0]).expand(3)
            x.add_(1)

    assert_same(fn, device)


def test_float16_and_int_targets_keep_their_dtype(device):
    def fn(lib, make):
        h = make([1.0, 2.0], dtype=lib.float16)
        h += make([0.5, 0.25], dtype=lib.float64)
        i = make([1, 2])
        i *= 3
        return h, str(h.dtype).split(".")[-1] == "float16", i, str(i.dtype).split(".")[-1] == "int64"

    assert_same(fn, device)


# ---------------------------------------------------------------------------------- setitem
SETITEM = {
    "int": lambda t, v: t.__setitem__(0, v[0]), "slice": lambda t, v: t.__setitem__(slice(0, 2), v[:2]),
    "column": lambda t, v: t.__setitem__((slice(None), 1), v[0]), "scalar": lambda t, v: t.__setitem__((1, 2), 7.0),
    "int array": lambda t, v: t.__setitem__(([0, 1], [2, 0]), v[0, :2]),
    "mask": lambda t, v: t.__setitem__(t > 1.0, 0.5), "masked tensor": lambda t, v: t.__setitem__(t > 1.0, v[0, 0]),
    "ellipsis": lambda t, v: t.__setitem__(Ellipsis, v),
}


@pytest.mark.parametrize("name", SETITEM)
def test_setitem_writes_in_place(name, device):
    def fn(lib, make):
        x = make([[0.5, -1.5, 2.0], [1.0, -0.25, 3.0]])
        SETITEM[name](x, make([[9.0, 8.0, 7.0], [6.0, 5.0, 4.0]]))
        return x

    assert_same(fn, device)


@pytest.mark.parametrize("name", SETITEM)
def test_setitem_on_a_non_leaf_is_recorded(name, device):
    def fn(lib, make):
        a = make([[0.5, -1.5, 2.0], [1.0, -0.25, 3.0]], requires_grad=True)
        v = make([[9.0, 8.0, 7.0], [6.0, 5.0, 4.0]], requires_grad=True)
        h = a * 2
        SETITEM[name](h, v * 1.0)
        h.backward(make(UPSTREAM.tolist()))
        return h, a.grad, v.grad if v.grad is not None else lib.zeros(2, 3)

    assert_same(fn, device)


def test_setitem_with_a_wrong_shape_raises(device):
    def fn(lib, make):
        x = make([1.0, 2.0, 3.0])
        x[:2] = make([1.0, 2.0, 3.0])

    assert_same(fn, device)


# ---------------------------------------------------------------------------------- versions
def test_the_fill_example_raises_instead_of_a_wrong_gradient(device):
    def fn(lib, make):
        a, b = make([1.0, 1.0, 1.0], requires_grad=True), make([1.0, 1.0, 1.0], requires_grad=True)
        c = b * 1
        y = (a * c).sum()
        c.fill_(2.0)
        y.backward()

    message = assert_same(fn, device)
    assert re.search(r"modified by an inplace operation.*MulBackward0.*version 1; expected version 0", message)


def test_an_optimizer_step_between_forward_and_backward_raises(device):
    def fn(lib, make):
        lib.manual_seed(0)
        layer = lib.nn.Linear(3, 2).to(device) if lib is tn else lib.nn.Linear(3, 2)
        x = make([[1.0, 2.0, 3.0]], requires_grad=True)
        out = layer(x).sum()
        out.backward(retain_graph=True)
        lib.optim.SGD(layer.parameters(), lr=0.1).step()
        out.backward()

    assert "modified by an inplace operation" in assert_same(fn, device)


def test_changing_an_input_the_op_did_not_save_is_fine(device):
    """``exp`` saves its output, not its input: changing the input afterwards is harmless, as in PyTorch."""
    def fn(lib, make):
        a = make([0.5, 1.0], requires_grad=True)
        x = a * 1
        y = x.exp()
        x.add_(1.0)
        y.backward(make([1.0, 2.0]))
        return a.grad, x._version, y._version

    assert_same(fn, device)


def test_a_saved_output_changed_in_place_raises(device):
    def fn(lib, make):
        a = make([0.5, 1.0], requires_grad=True)
        y = a.exp()
        y.mul_(2)
        y.backward(make([1.0, 2.0]))

    assert "modified by an inplace operation" in assert_same(fn, device)


def test_an_input_saved_as_a_view_changed_in_place_raises(device):
    """LayerNorm saves a reshaped view of its input: the version check sees through it."""
    x = tn.randn(4, 6, device=device) * 1
    x.requires_grad_()
    h = x * 1
    y = tn.nn.functional.layer_norm(h, (6,))
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward(tn.randn(4, 6, device=device))


def test_versions_count_writes_and_views_share_them(device):
    x = tn.zeros(2, 3, device=device)
    view, detached, data = x[0], x.detach(), x.data
    assert x._version == 0
    x.add_(1)
    view.mul_(2)
    assert x._version == view._version == detached._version == 2
    data.zero_()  # .data has a counter of its own, as in PyTorch
    assert x._version == 2 and data._version == 1


# ------------------------------------------------------------------------------------- views
VIEWS = {
    "view": lambda t: t.view(3, 2), "view -1": lambda t: t.view(-1), "reshape": lambda t: t.reshape(6),
    "index": lambda t: t[1], "slice": lambda t: t[:, 1:], "step": lambda t: t[:, ::2], "transpose": lambda t: t.transpose(0, 1),
    "t": lambda t: t.t(), "T": lambda t: t.T, "mT": lambda t: t.mT, "permute": lambda t: t.permute(1, 0),
    "unsqueeze": lambda t: t.unsqueeze(0), "squeeze": lambda t: t.unsqueeze(1).squeeze(1), "narrow": lambda t: t.narrow(1, 1, 2),
    "unbind": lambda t: t.unbind(1)[2], "split": lambda t: t.split(2, dim=1)[1], "chunk": lambda t: t.chunk(2)[1],
    "flatten": lambda t: t.flatten(), "view_as": lambda t: t.view_as(t.reshape(3, 2)),
    "detach": lambda t: t.detach(), "select 0-d": lambda t: t[1, 2],
}


@pytest.mark.parametrize("name", VIEWS)
def test_views_share_memory_with_their_base(name, device):
    def fn(lib, make):
        x = make([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
        v = VIEWS[name](x)
        v.mul_(10)  # seen by the base
        x.add_(0.5)  # and the base's writes by the view
        return x, v, x._version == v._version

    assert_same(fn, device)


@pytest.mark.parametrize("name", ["view", "index", "transpose", "unsqueeze", "narrow", "select 0-d"])
def test_writes_through_a_view_rebase_the_base_history(name, device):
    def fn(lib, make):
        a = make([[0.5, -1.5, 2.0], [1.0, -0.25, 3.0]], requires_grad=True)
        w = make([2.0], requires_grad=True)
        h = a * 1
        VIEWS[name](h).mul_(w)
        (h * make(UPSTREAM.tolist())).sum().backward()
        return h, a.grad, w.grad

    assert_same(fn, device)


def test_relu_in_place_after_flatten_rebases(device):
    def fn(lib, make):
        x = make([[-1.0, 2.0], [3.0, -4.0]], requires_grad=True)
        h = x * 1
        flat = h.flatten()
        lib.nn.functional.relu(flat, inplace=True) if lib is torch else flat.relu_()
        (h * make([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        return x.grad, flat

    assert_same(fn, device)


def test_view_raises_where_no_view_exists_and_reshape_copies(device):
    def fn(lib, make):
        x = make([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]).t()
        x.view(6)

    assert "view size is not compatible" in assert_same(fn, device)
    x = tn.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], device=device).t()
    copy = x.reshape(6)
    copy.zero_()
    assert copy._base is None and x.numpy().sum() == 15



def test_view_infers_one_size_and_refuses_a_dtype(device):
    """``view(-1)``/``view(3, -1)`` share memory, as in PyTorch; ``view(dtype)`` is not supported
    (docs/differences.md) and says what converts instead."""
    x = tn.arange(6.0, device=device)
    flat, square = x.view(-1), x.view((3, -1))
    assert tuple(square.shape) == (3, 2) and square._base is x and flat._base is x
    square[0, 1] = 7.0
    assert x[1].item() == 7.0 and flat[1].item() == 7.0
    with pytest.raises(TypeError, match=r"view\(dtype\).*not supported.*\.to\("):
        x.view(tn.int64)

def test_contiguous_is_honest(device):
    x = tn.arange(6.0, device=device).view(2, 3)
    t = x.t()
    assert x.is_contiguous() and not t.is_contiguous()
    c = t.contiguous()
    assert c.is_contiguous() and c is not t and x.contiguous() is x
    np.testing.assert_array_equal(c.numpy(), t.numpy())


@pytest.mark.parametrize("call", ["unsqueeze(5)", "stack dim 7", "permute(0, 3)", "sum dims (0, 0)", "reshape(-2, 6)",
                                  "transpose(0, 2)", "squeeze(2)", "flatten(1, 0)", "narrow past the end", "chunk(0)"])
def test_bad_dims_raise_as_in_pytorch(call, device):
    def fn(lib, make):
        x = make([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        {"unsqueeze(5)": lambda: x.unsqueeze(5), "stack dim 7": lambda: lib.stack([x, x], dim=7),
         "permute(0, 3)": lambda: x.permute(0, 3), "sum dims (0, 0)": lambda: x.sum(dim=(0, 0)),
         "reshape(-2, 6)": lambda: x.reshape(-2, 6), "transpose(0, 2)": lambda: x.transpose(0, 2),
         "squeeze(2)": lambda: x.squeeze(2), "flatten(1, 0)": lambda: x.flatten(1, 0),
         "narrow past the end": lambda: x.narrow(1, 2, 3), "chunk(0)": lambda: x.chunk(0)}[call]()

    assert_same(fn, device)


# -------------------------------------------------------------------------------------- .data
def test_data_shares_memory_outside_the_graph(device):
    def fn(lib, make):
        p = lib.nn.Parameter(make([1.0, 2.0, 3.0]))
        d = p.data
        d.fill_(0.5)
        shared = p * 1
        p.data = make([4.0, 5.0])
        return shared, p, d.requires_grad, p.requires_grad, type(d).__name__ == "Tensor"

    assert_same(fn, device)


# -------------------------------------------------------------------------------- promotion
PROMOTION = {
    "int / float": lambda m: m([1, 2, 3]) / 255.0, "int / int": lambda m: m([1, 2, 3]) / 2,
    "int * float": lambda m: m([1, 2, 3]) * 2.5, "int tensor / int tensor": lambda m: m([1, 2]) / m([2, 4]),
    "f32 * f64 0-d": lambda m: m([1.0, 2.0]) * m(2.0, dtype_name="float64"),
    "int + f64 0-d": lambda m: m([1, 2]) + m(2.5, dtype_name="float64"),
    "uint8 + 1000": lambda m: m([1, 2], dtype_name="uint8") + 1000, "bool + int": lambda m: m([True, False]) + 1,
    "bool + float": lambda m: m([True, False]) + 1.5, "int64 + f16": lambda m: m([1, 2]) + m([1.0, 2.0], dtype_name="float16"),
    "f16 * float": lambda m: m([1.0, 2.0], dtype_name="float16") * 3.0, "int32 + int64 0-d": lambda m: m([1, 2], dtype_name="int32") + m(3),
    "int8 + uint8": lambda m: m([1, -2], dtype_name="int8") + m([3, 4], dtype_name="uint8"),
    "f32 + numpy f64": lambda m: m([1.0, 2.0]) * np.float64(2.0), "sqrt int": lambda m: m([1, 4]).sqrt(),
    "exp int": lambda m: m([0, 1]).exp(), "pow int float": lambda m: m([1, 2]) ** 0.5,
    "maximum": lambda m: m.lib.maximum(m([1, 5]), m([2.0, 3.0])),
    "where": lambda m: m.lib.where(m([True, False]), m([1, 2]), m([0.5, 1.5])),
}


@pytest.mark.parametrize("name", PROMOTION)
def test_type_promotion_is_pytorchs(name, device):
    def fn(lib, make):
        def m(values, dtype_name=None):
            return make(values, **({} if dtype_name is None else {"dtype": getattr(lib, dtype_name)}))

        m.lib = lib
        result = PROMOTION[name](m)
        return result, str(result.dtype).split(".")[-1]

    ours, theirs = run(tn, device, fn), run(torch, device, fn)
    assert ours[1] == theirs[1], f"{name}: tinynorm {ours[1]}, PyTorch {theirs[1]}"
    np.testing.assert_allclose(plain(ours[0]).astype(float), plain(theirs[0]).astype(float), rtol=1e-3)


def test_integers_to_negative_integer_powers_raise(device):
    def fn(lib, make):
        return make([2, 3]) ** -1

    assert "negative integer powers" in assert_same(fn, device)


def test_the_default_dtype_decides_integer_division():
    tn.set_default_dtype(tn.float64)
    try:
        assert (tn.tensor([1, 2]) / 2).dtype == tn.float64 and tn.get_default_dtype() == tn.float64
    finally:
        tn.set_default_dtype(tn.float32)


def test_linear_refuses_a_dtype_that_does_not_match_its_weight(device):
    layer = tn.nn.Linear(3, 2).to(device)
    with pytest.raises(RuntimeError, match=r"float64.*float32.*layer.to"):
        layer(tn.ones(1, 3, dtype=tn.float64, device=device))
    image = tn.tensor([[0, 128, 255]], dtype=np.uint8, device=device)
    assert layer(image / 255.0).dtype == tn.float32  # the usual conversion gives the layer's dtype


# ----------------------------------------------------------------------------- autograd API
def test_autograd_grad_returns_gradients_and_leaves_dot_grad_alone(device):
    def fn(lib, make):
        x = make([1.0, 2.0, 3.0], requires_grad=True)
        w = make([0.5, -1.0, 2.0], requires_grad=True)
        h = x * w
        y = (h ** 2).sum()
        z = (h * 3).sum()
        gx, gh = lib.autograd.grad(y, (x, h), retain_graph=True)
        (gw,) = lib.autograd.grad([y, z], [w], grad_outputs=[make(2.0), make(-1.0)])
        return gx, gh, gw, x.grad is None and w.grad is None

    assert_same(fn, device)


def test_autograd_grad_unused_inputs(device):
    def fn(lib, make):
        x, unused = make([1.0, 2.0], requires_grad=True), make([3.0], requires_grad=True)
        y = (x * 2).sum()
        gx, gu = lib.autograd.grad(y, [x, unused], allow_unused=True, retain_graph=True)
        gx2, gu2 = lib.autograd.grad(y, [x, unused], materialize_grads=True)
        return gx, gu is None, gu2

    assert_same(fn, device)

    def strict(lib, make):
        x, unused = make([1.0, 2.0], requires_grad=True), make([3.0], requires_grad=True)
        lib.autograd.grad((x * 2).sum(), [x, unused])

    assert "not have been used in the graph" in assert_same(strict, device)


def test_backward_with_inputs_accumulates_only_into_them(device):
    def fn(lib, make):
        x, w = make([1.0, 2.0], requires_grad=True), make([3.0, -1.0], requires_grad=True)
        h = x * w
        h.retain_grad()
        (h * h).sum().backward(inputs=[w, h])
        return w.grad, h.grad, x.grad is None

    assert_same(fn, device)


def test_tensor_hook_handles_remove_the_hook(device):
    def fn(lib, make):
        x = make([1.0, 2.0], requires_grad=True)
        handle = x.register_hook(lambda g: g * 10)
        (x * 3).sum().backward()
        first = x.grad.clone()
        handle.remove()
        x.grad = None
        (x * 3).sum().backward()
        return first, x.grad

    assert_same(fn, device)


def test_module_hooks_match_pytorch(device):
    def fn(lib, make):
        layer = lib.nn.Linear(3, 2)
        with lib.no_grad():
            layer.weight.copy_(make([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]]))
            layer.bias.fill_(0.1)
        if lib is tn:
            layer.to(device)
        log = []
        handles = [
            layer.register_forward_pre_hook(lambda m, args: (args[0] * 2,)),
            layer.register_forward_hook(lambda m, args, out: out + 1),
            layer.register_full_backward_pre_hook(lambda m, grad_out: log.append(plain(grad_out[0]))),
            layer.register_full_backward_hook(lambda m, grad_in, grad_out: log.append(plain(grad_in[0]))),
        ]
        x = make([[1.0, 1.0, 1.0], [0.0, 1.0, 2.0]], requires_grad=True)
        y = layer(x)
        y.backward(make([[1.0, 2.0], [3.0, 4.0]]))
        for handle in handles:
            handle.remove()
        return y, x.grad, log[0], log[1], layer(x)

    assert_same(fn, device)


def test_a_backward_hook_can_replace_the_input_gradient(device):
    def fn(lib, make):
        layer = lib.nn.Tanh()
        layer.register_full_backward_hook(lambda m, grad_in, grad_out: (grad_in[0] * 0.5,))
        x = make([0.3, -0.2], requires_grad=True)
        layer(x).backward(make([1.0, -2.0]))
        return x.grad

    assert_same(fn, device)


def test_node_names_and_next_functions_are_pytorchs(device):
    def fn(lib, make):
        x = make([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        results = [x + 1, x * 2, x - 1, x / 2, -x, x ** 2, x.exp(), x.sum(), x.sum(1), x.mean(), x.mean(0), x.view(6),
                   x.relu(), x.sigmoid(), x.tanh(), lib.nn.functional.linear(x, x, x[:, 0]), x.softmax(1), x.log_softmax(1),
                   lib.nn.functional.cross_entropy(x, make([0, 2])), lib.nn.functional.layer_norm(x, (3,))]
        loss = (x * 2).sum()
        first = loss.grad_fn.next_functions[0][0]
        leaf = first.next_functions[0][0]
        return [r.grad_fn.name() for r in results] + [first.name(), type(leaf).__name__, leaf.variable is x]

    ours, theirs = run(tn, device, fn), run(torch, device, fn)
    assert ours == theirs


def test_retain_grad_and_is_leaf(device):
    def fn(lib, make):
        x = make([1.0, 2.0], requires_grad=True)
        h = x * 3
        h.retain_grad()
        (h * h).sum().backward()
        return h.grad, h.retains_grad, x.retains_grad, h.is_leaf, x.is_leaf, (x * 2).detach().is_leaf

    assert_same(fn, device)


def test_deepcopy_and_pickle_keep_leaves_and_refuse_graph_tensors(device):
    import copy
    import pickle

    model = tn.nn.Linear(3, 2).to(device)
    model(tn.ones(4, 3, device=device)).sum().backward()
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert isinstance(clone.weight, tn.nn.Parameter) and clone.weight.requires_grad
        np.testing.assert_array_equal(clone.weight.numpy(), model.weight.numpy())
        np.testing.assert_array_equal(clone.weight.grad.numpy(), model.weight.grad.numpy())
        with tn.no_grad():
            clone.weight.zero_()
        assert model.weight.numpy().any()  # a copy, not a view
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(tn.ones(2, requires_grad=True, device=device) * 2)


def test_random_fills_draw_from_the_generator(device):
    x, y = tn.zeros(1000, device=device), tn.zeros(1000, device=device)
    x.normal_(2.0, 0.5, generator=tn.Generator(device).manual_seed(7))
    y.normal_(2.0, 0.5, generator=tn.Generator(device).manual_seed(7))
    np.testing.assert_array_equal(x.numpy(), y.numpy())
    assert abs(x.numpy().mean() - 2.0) < 0.1 and abs(x.numpy().std() - 0.5) < 0.05
    x.uniform_(-1.0, 3.0)
    assert -1.0 <= x.numpy().min() and x.numpy().max() < 3.0
    x.bernoulli_(0.25)
    assert set(np.unique(x.numpy())) <= {0.0, 1.0} and abs(x.numpy().mean() - 0.25) < 0.06


def test_a_batch_norm_training_step_counts_versions_as_pytorch(device):
    def fn(lib, make):
        layer = lib.nn.BatchNorm1d(3).to(device) if lib is tn else lib.nn.BatchNorm1d(3)
        buffers = (layer.running_mean, layer.running_var, layer.num_batches_tracked)
        before = [b._version for b in buffers]
        layer(make([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]]))
        return [b._version - v for b, v in zip(buffers, before)]

    assert_same(fn, device)
