"""Tensor creation, default dtypes, attributes, conversions and the non-differentiable ops."""
import numpy as np
import pytest

import tinynorm


# ------------------------------------------------------------------------------- factories
@pytest.mark.parametrize("factory, value", [(tinynorm.zeros, 0.0), (tinynorm.ones, 1.0)])
def test_zeros_ones_take_sizes_as_varargs_or_a_tuple(factory, value):
    for t in (factory(2, 3), factory((2, 3)), factory([2, 3])):
        assert t.shape == (2, 3) and t.dtype == np.float32
        assert (t.numpy() == value).all()
    assert factory(4, dtype=tinynorm.float64).dtype == np.float64


def test_full_empty_arange():
    assert tinynorm.full((2, 2), 1.5).dtype == np.float32
    assert tinynorm.full((2,), 7).dtype == np.int64  # an int fill value gives int64, as PyTorch
    np.testing.assert_array_equal(tinynorm.full((2, 2), 1.5).numpy(), np.full((2, 2), 1.5))
    assert tinynorm.empty(3, 1).shape == (3, 1) and tinynorm.empty(3).dtype == np.float32
    np.testing.assert_array_equal(tinynorm.arange(5).numpy(), np.arange(5))
    assert tinynorm.arange(5).dtype == np.int64
    np.testing.assert_allclose(tinynorm.arange(1, 2, 0.25).numpy(), [1.0, 1.25, 1.5, 1.75])
    assert tinynorm.arange(1, 2, 0.25).dtype == np.float32


def test_like_factories_copy_shape_and_dtype():
    base = tinynorm.ones(2, 5, dtype="float64")
    for fn in (tinynorm.zeros_like, tinynorm.ones_like, tinynorm.empty_like, tinynorm.randn_like, tinynorm.rand_like):
        made = fn(base)
        assert made.shape == (2, 5) and made.dtype == np.float64
    assert (tinynorm.full_like(base, 4.0).numpy() == 4.0).all()
    assert tinynorm.zeros_like(base, dtype="float32").dtype == np.float32


def test_random_factories_are_reproducible_with_manual_seed():
    tinynorm.manual_seed(42)
    first = (tinynorm.randn(3, 4).numpy(), tinynorm.rand(5).numpy())
    tinynorm.manual_seed(42)
    second = (tinynorm.randn(3, 4).numpy(), tinynorm.rand(5).numpy())
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    assert not np.array_equal(first[0], tinynorm.randn(3, 4).numpy())  # the stream moves on
    assert first[0].dtype == np.float32 and ((first[1] >= 0) & (first[1] < 1)).all()


def test_randn_and_rand_have_the_right_distribution():
    tinynorm.manual_seed(0)
    normal, uniform = tinynorm.randn(20000).numpy(), tinynorm.rand(20000).numpy()
    assert abs(normal.mean()) < 0.03 and abs(normal.std() - 1) < 0.03
    assert abs(uniform.mean() - 0.5) < 0.01 and abs(uniform.var() - 1 / 12) < 0.003


def test_factories_reject_bad_sizes_and_dtypes():
    with pytest.raises(ValueError, match="non-negative"):
        tinynorm.zeros(-1)
    with pytest.raises(TypeError, match="dtype"):
        tinynorm.zeros(2, dtype="complex64")
    with pytest.raises(TypeError, match="seed"):
        tinynorm.manual_seed(1.5)


# ---------------------------------------------------------------------------- default dtypes
@pytest.mark.parametrize("data, dtype", [
    (1.5, np.float32), ([1.0, 2.0], np.float32), (3, np.int64), ([[1, 2]], np.int64), (True, np.bool_),
    (np.ones(2, np.float64), np.float64), (np.ones(2, np.float16), np.float16),
    (np.arange(3, dtype=np.int32), np.int32),
])
def test_default_dtypes_follow_pytorch(data, dtype):
    assert tinynorm.tensor(data).dtype == dtype


def test_tensor_copies_its_data_and_accepts_a_dtype():
    source = np.zeros(3)
    t = tinynorm.tensor(source, dtype=tinynorm.float32)
    source[0] = 5
    assert t.dtype == np.float32 and t.numpy()[0] == 0
    with pytest.raises(TypeError, match="cannot make a tensor"):
        tinynorm.tensor(["a", "b"])


def test_set_default_dtype_changes_what_python_floats_become():
    try:
        tinynorm.set_default_dtype(tinynorm.float64)
        assert tinynorm.tensor(1.0).dtype == np.float64 and tinynorm.zeros(1).dtype == np.float64
    finally:
        tinynorm.set_default_dtype(tinynorm.float32)
    with pytest.raises(TypeError, match="float32 or float64"):
        tinynorm.set_default_dtype(tinynorm.int64)


# ------------------------------------------------------------------------------- attributes
def test_attributes_and_conversions():
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = tinynorm.tensor(values)
    assert t.shape == (2, 3) and t.ndim == 2 and t.dim() == 2 and t.dtype == np.float32 and t.device == "cpu"
    assert t.size() == (2, 3) and t.size(1) == 3 and t.numel() == 6 and len(t) == 2
    np.testing.assert_array_equal(t.numpy(), values)
    np.testing.assert_array_equal(np.asarray(t), values)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert t[1, 2].item() == 5.0 and isinstance(t[1, 2].item(), float)
    assert isinstance(tinynorm.tensor([7]).item(), int)
    with pytest.raises(ValueError, match=r"one-element.*\(2, 3\)"):
        t.item()


def test_numpy_shares_memory_and_works_on_tensors_that_require_grad():
    t = tinynorm.zeros(3, requires_grad=True)
    t.numpy()[0] = 2.0  # deliberate difference from PyTorch: no .detach() needed
    assert t.numpy()[0] == 2.0


def test_detach_and_requires_grad_():
    t = tinynorm.ones(2)
    assert not t.requires_grad and t.is_leaf
    assert t.requires_grad_() is t and t.requires_grad
    y = t * 2
    assert not y.is_leaf and y.requires_grad
    d = y.detach()
    assert d.grad_fn is None and not d.requires_grad and np.shares_memory(d.numpy(), y.numpy())
    with pytest.raises(RuntimeError, match="detach"):
        y.requires_grad_(False)


def test_repr_shows_values_dtype_and_grad_fn():
    assert repr(tinynorm.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert "dtype=float64" in repr(tinynorm.tensor([1.0], dtype="float64"))
    assert "requires_grad=True" in repr(tinynorm.ones(1, requires_grad=True))
    assert "grad_fn=<MulBackward0>" in repr(tinynorm.ones(1, requires_grad=True) * 2)


def test_to_and_dtype_shortcuts():
    t = tinynorm.ones(2)
    assert t.to(tinynorm.float32) is t  # nothing to change
    assert t.double().dtype == np.float64 and t.long().dtype == np.int64 and t.half().dtype == np.float16
    assert t.to("cpu", dtype=tinynorm.float64).dtype == np.float64
    assert t.type_as(tinynorm.ones(1, dtype="float64")).dtype == np.float64


def test_in_place_helpers():
    t = tinynorm.ones(2, 2)
    t.zero_()
    assert (t.numpy() == 0).all()
    t.fill_(3.0)
    assert (t.numpy() == 3).all()
    t.copy_(np.eye(2))
    np.testing.assert_array_equal(t.numpy(), np.eye(2))
    with pytest.raises(RuntimeError, match=r"\[3\].*\[2, 2\]"):
        t.copy_(np.ones(3))


# ----------------------------------------------------------------- non-differentiable ops
def test_comparisons_give_bool_tensors_outside_the_graph():
    x = tinynorm.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for result, expected in [(x < 2, [1, 0, 0]), (x <= 2, [1, 1, 0]), (x > 2, [0, 0, 1]), (x >= 2, [0, 1, 1]),
                             (x == 2, [0, 1, 0]), (x != 2, [1, 0, 1]), (2 < x, [0, 0, 1])]:
        assert result.dtype == np.bool_ and not result.requires_grad and result.grad_fn is None
        np.testing.assert_array_equal(result.numpy(), np.array(expected, dtype=bool))


def test_argmax_argmin_are_int64_and_not_differentiable():
    data = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], dtype=np.float32)
    x = tinynorm.tensor(data, requires_grad=True)
    assert x.argmax().item() == 3 and x.argmin().item() == 4
    np.testing.assert_array_equal(x.argmax(1).numpy(), [1, 0])
    assert x.argmin(0, keepdim=True).shape == (1, 3)
    assert x.argmax().dtype == np.int64 and not x.argmax(1).requires_grad


def test_bool_of_a_multi_element_tensor_is_ambiguous():
    with pytest.raises(ValueError, match="ambiguous"):
        bool(tinynorm.ones(2))
    assert bool(tinynorm.ones(1)) and float(tinynorm.tensor(2.5)) == 2.5 and int(tinynorm.tensor(3)) == 3
