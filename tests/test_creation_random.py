"""Creation and random sampling: from_numpy, as_tensor, linspace, logspace, eye, the *_like functions,
randint, randperm, normal, bernoulli, multinomial and tinynorm.Generator.

Deterministic values are compared with PyTorch's; random ones with PyTorch's shapes and dtypes and with
their distributions (the numbers themselves differ: tinynorm draws from numpy's PCG64).
"""
import math

import numpy as np
import pytest

import tinynorm as tn

RANDOM_CALLS = {  # name -> a call made with either library as ``m`` (the same arguments in both)
    "randint(10, (2, 3))": lambda m, **k: m.randint(10, (2, 3), **k),
    "randint(-5, 5, size=(4,))": lambda m, **k: m.randint(-5, 5, size=(4,), **k),
    "randint(3, (2,), dtype=float32)": lambda m, **k: m.randint(3, (2,), dtype=m.float32, **k),
    "randperm(7)": lambda m, **k: m.randperm(7, **k),
    "randperm(5, dtype=float64)": lambda m, **k: m.randperm(5, dtype=m.float64, **k),
    "normal(2., 3., (2, 2))": lambda m, **k: m.normal(2.0, 3.0, (2, 2), **k),
    "normal(mean f64 (3,), 1.)": lambda m, **k: m.normal(m.zeros(3, dtype=m.float64), 1.0, **k),
    "normal(0., std (2, 1))": lambda m, **k: m.normal(0.0, m.ones(2, 1), **k),
    "normal(mean (2, 1), std (3,))": lambda m, **k: m.normal(m.zeros(2, 1), m.ones(3), **k),
    "bernoulli(full 0.3 (4,))": lambda m, **k: m.bernoulli(m.full((4,), 0.3), **k),
    "bernoulli(zeros f64 (2,), 0.5)": lambda m, **k: m.bernoulli(m.zeros(2, dtype=m.float64), 0.5, **k),
    "multinomial(ones 5, 3)": lambda m, **k: m.multinomial(m.ones(5), 3, **k),
    "multinomial(ones (2, 4), 6, True)": lambda m, **k: m.multinomial(m.ones(2, 4), 6, True, **k),
    "rand_like(f64 (2, 3))": lambda m, **k: m.rand_like(m.zeros(2, 3, dtype=m.float64), **k),
    "randn_like((4,))": lambda m, **k: m.randn_like(m.zeros(4), **k),
    "randint_like(int32 (3,), 2, 9)": lambda m, **k: m.randint_like(m.zeros(3, dtype=m.int32), 2, 9, **k),
    "randint_like((2,), 4)": lambda m, **k: m.randint_like(m.zeros(2), 4, **k),
}


def torch_dtype_name(dtype):
    return str(dtype).replace("torch.", "")


# ------------------------------------------------------------------- deterministic values
@pytest.mark.parametrize("args, kwargs", [
    ((0, 1, 7), {}), ((-3.5, 2.25, 50), {}), ((0, 1, 1000), {}), ((1, 0, 9), {}), ((0, 1, 1), {}), ((3, 1, 0), {}),
    ((0, 1, 5), {"dtype": "float64"}), ((-7, 9, 6), {"dtype": "int32"}), ((0, 10, 4), {"dtype": "int64"}),
    ((2.7, -3.9, 5), {"dtype": "int64"}), ((0, 1, 33), {"dtype": "float16"}),
])
def test_linspace_equals_pytorch(args, kwargs):
    torch = pytest.importorskip("torch")
    ours = tn.linspace(*args, dtype=kwargs.get("dtype"))
    theirs = torch.linspace(*args, dtype=getattr(torch, kwargs["dtype"]) if kwargs else None)
    assert ours.dtype == np.dtype(torch_dtype_name(theirs.dtype)) and ours.shape == tuple(theirs.shape)
    # Bit for bit below PyTorch's vectorized length; its vector lanes may round the last bit differently.
    tolerance = 0 if args[2] < 16 or ours.dtype.kind in "iu" else np.finfo(ours.dtype).eps
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("args, kwargs", [
    ((0, 3, 4), {}), ((-2, 2, 9), {"base": 2.0}), ((0.5, -1.5, 6), {"dtype": "float64"}),
    ((0, 4, 5), {"base": 2, "dtype": "int64"}), ((1, 1, 1), {}),
])
def test_logspace_equals_pytorch(args, kwargs):
    torch = pytest.importorskip("torch")
    dtype = kwargs.get("dtype")
    ours = tn.logspace(*args, base=kwargs.get("base", 10.0), dtype=dtype)
    theirs = torch.logspace(*args, base=kwargs.get("base", 10.0), dtype=getattr(torch, dtype) if dtype else None)
    assert ours.dtype == np.dtype(torch_dtype_name(theirs.dtype))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-7)


@pytest.mark.parametrize("args, dtype", [((3,), None), ((2, 4), None), ((4, 2), "int64"), ((0,), None),
                                         ((3, 0), "bool")])
def test_eye_equals_pytorch(args, dtype):
    torch = pytest.importorskip("torch")
    ours, theirs = tn.eye(*args, dtype=dtype), torch.eye(*args, dtype=getattr(torch, dtype) if dtype else None)
    assert ours.dtype == np.dtype(torch_dtype_name(theirs.dtype))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_range_factories_take_tensors_out_and_requires_grad():
    ends = tn.linspace(tn.tensor(0.0), tn.tensor(1.0), 3)
    np.testing.assert_array_equal(ends.numpy(), [0, 0.5, 1])
    out = tn.empty(4, dtype=tn.float64)
    assert tn.linspace(0, 3, 4, out=out) is out and out.numpy().tolist() == [0, 1, 2, 3]
    empty = tn.empty(0)
    assert tn.eye(2, out=empty) is empty and empty.shape == (2, 2)  # an empty out takes the result's shape
    assert tn.logspace(0, 1, 2, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="out has shape"):
        tn.eye(3, out=tn.empty(2))
    with pytest.raises(RuntimeError, match="dtype float32 does not match"):
        tn.linspace(0, 1, 3, out=tn.empty(3, dtype=tn.float64), dtype=tn.float32)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        tn.linspace(0, 1, 2, out=tn.empty(2, requires_grad=True))


@pytest.mark.parametrize("call, error, message", [
    (lambda: tn.linspace(0, 1, -1), RuntimeError, "steps must be greater or equal to 0, got -1"),
    (lambda: tn.linspace(0, 1, 2.5), TypeError, "steps must be an int, got float"),
    (lambda: tn.linspace(tn.zeros(2), 1, 3), ValueError, "start must be a number or a 0-dimensional tensor"),
    (lambda: tn.linspace("a", 1, 3), TypeError, "start must be a real number, got str"),
    (lambda: tn.linspace(0, 1, 3, dtype=tn.bool_), TypeError, "dtype bool"),
    (lambda: tn.eye(-1), RuntimeError, "n must be greater or equal to 0, got -1"),
    (lambda: tn.eye(2, -3), RuntimeError, "m must be greater or equal to 0, got -3"),
    (lambda: tn.logspace(0, 1, 2, out=[0, 0]), TypeError, "out must be a Tensor, got list"),
])
def test_range_factories_refuse_bad_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()


# --------------------------------------------------------------------- numpy interop
def test_from_numpy_shares_memory_both_ways():
    array = np.arange(6, dtype=np.float64).reshape(2, 3)[:, ::2]  # a non-contiguous view
    tensor = tn.from_numpy(array)
    assert tensor.dtype == np.float64 and tensor.shape == (2, 2) and not tensor.requires_grad
    array[0, 0] = 7.0
    assert tensor[0, 0].item() == 7.0
    tensor.copy_(np.full((2, 2), 3.0))
    assert (array == 3.0).all()
    assert tn.from_numpy(np.array(2, np.int16)).shape == () and tn.from_numpy(np.ones(0, np.uint8)).numel() == 0


@pytest.mark.parametrize("array, error, message", [
    (np.array(["a"]), TypeError, "dtype <U1"),
    (np.array([1 + 2j]), TypeError, "dtype complex128"),
    (np.array([None]), TypeError, "dtype object"),
    (np.arange(3, dtype=np.uint32), TypeError, "dtype uint32"),
    (np.arange(3.0).astype(">f8"), ValueError, "byte order"),
    (np.arange(3.0)[::-1], ValueError, "negative"),
])
def test_from_numpy_refuses_what_a_tensor_cannot_share(array, error, message):
    with pytest.raises(error, match=message):
        tn.from_numpy(array)


def test_from_numpy_refuses_other_types_and_warns_for_read_only_arrays():
    with pytest.raises(TypeError, match="expected a numpy.ndarray, got list"):
        tn.from_numpy([1, 2])
    frozen = np.ones(3)
    frozen.flags.writeable = False
    with pytest.warns(UserWarning, match="read-only"):
        tensor = tn.from_numpy(frozen)
    assert np.shares_memory(tensor.numpy(), frozen)


def test_as_tensor_shares_a_numpy_array_unless_it_must_convert():
    array = np.zeros(3, np.float32)
    assert np.shares_memory(tn.as_tensor(array).numpy(), array)
    assert np.shares_memory(tn.as_tensor(array, dtype=tn.float32).numpy(), array)
    assert not np.shares_memory(tn.as_tensor(array, dtype=tn.float64).numpy(), array)
    assert tn.as_tensor([1.0, 2.0]).dtype == np.float32 and tn.as_tensor(3).dtype == np.int64


def test_like_functions_keep_shape_dtype_device_unless_told():
    base = tn.zeros(2, 3, dtype=tn.float64)
    for fn in (tn.empty_like, tn.rand_like, tn.randn_like):
        made = fn(base, device="cpu")
        assert made.shape == (2, 3) and made.dtype == np.float64 and made.device == "cpu"
    assert tn.full_like(tn.zeros(2, dtype=tn.int64), 3.7).numpy().tolist() == [3, 3]  # PyTorch truncates too
    assert tn.empty_like(base, dtype=tn.float32).dtype == np.float32
    with pytest.raises(TypeError, match="rand: dtype must be a floating-point dtype, got int64"):
        tn.rand_like(tn.zeros(2, dtype=tn.int64))
    with pytest.raises(TypeError, match="randn: dtype must be a floating-point dtype"):
        tn.randn(2, dtype=tn.int64)


# ---------------------------------------------------------------- shapes and dtypes of random
@pytest.mark.parametrize("name", sorted(RANDOM_CALLS))
def test_random_results_have_pytorchs_shape_dtype_and_grad(name):
    torch = pytest.importorskip("torch")
    call = RANDOM_CALLS[name]
    ours, theirs = call(tn), call(torch)
    assert ours.shape == tuple(theirs.shape), name
    assert ours.dtype == np.dtype(torch_dtype_name(theirs.dtype)), name
    assert ours.requires_grad == theirs.requires_grad


@pytest.mark.parametrize("name", sorted(RANDOM_CALLS))
def test_every_random_function_follows_its_generator(name):
    call = RANDOM_CALLS[name]
    first = call(tn, generator=tn.Generator().manual_seed(7)).numpy()
    tn.randn(10)  # the global generator moving on changes nothing
    again = call(tn, generator=tn.Generator().manual_seed(7)).numpy()
    np.testing.assert_array_equal(first, again)
    tn.manual_seed(7)
    global_first = call(tn).numpy()
    tn.manual_seed(7)
    np.testing.assert_array_equal(call(tn).numpy(), global_first)


def test_random_samples_of_tensor_parameters_require_grad_with_a_zero_gradient():
    torch = pytest.importorskip("torch")
    upstream = np.random.default_rng(0).standard_normal(3).astype(np.float32)
    mean, std = tn.zeros(3, requires_grad=True), tn.ones(3, requires_grad=True)
    torch_mean, torch_std = torch.zeros(3, requires_grad=True), torch.ones(3, requires_grad=True)
    tn.normal(mean, std).backward(tn.tensor(upstream))
    torch.normal(torch_mean, torch_std).backward(torch.tensor(upstream))
    for ours, theirs in ((mean, torch_mean), (std, torch_std)):
        np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
    probability = tn.full((3,), 0.5, requires_grad=True)
    tn.bernoulli(probability).backward(tn.tensor(upstream, dtype=tn.float32))
    assert (probability.grad.numpy() == 0).all()


# --------------------------------------------------------------------- distributions
def test_randint_and_randperm_are_uniform():
    generator = tn.Generator().manual_seed(0)
    values = tn.randint(-3, 4, (70000,), generator=generator).numpy()
    counts = np.bincount(values + 3, minlength=7)
    assert values.min() == -3 and values.max() == 3
    assert np.abs(counts / 10000 - 1).max() < 0.05  # 7 equally likely values, 10000 each expected
    positions = np.stack([tn.randperm(5, generator=generator).numpy() for _ in range(4000)])
    assert all(sorted(row) == list(range(5)) for row in positions[:50])
    assert np.abs((positions == 0).mean(axis=0) - 0.2).max() < 0.03  # 0 lands anywhere equally often
    assert tn.randint(0, 2**63 - 1, (3,)).dtype == np.int64  # the full int64 range is allowed


def test_normal_and_bernoulli_have_their_moments():
    generator = tn.Generator().manual_seed(1)
    samples = tn.normal(tn.tensor([-5.0, 0.0, 40.0]).reshape(3, 1), tn.tensor([0.5, 1.0, 3.0]).reshape(3, 1)
                        .expand(3, 20000), generator=generator).numpy()
    np.testing.assert_allclose(samples.mean(axis=1), [-5, 0, 40], atol=0.07)
    np.testing.assert_allclose(samples.std(axis=1), [0.5, 1, 3], rtol=0.03)
    draws = tn.bernoulli(tn.tensor([0.0, 0.25, 1.0]).reshape(3, 1).expand(3, 20000), generator=generator).numpy()
    np.testing.assert_allclose(draws.mean(axis=1), [0, 0.25, 1], atol=0.015)
    assert set(np.unique(draws)) <= {0.0, 1.0}


def test_multinomial_follows_the_weights_with_and_without_replacement():
    generator = tn.Generator().manual_seed(2)
    weights = tn.tensor([[1.0, 2.0, 0.0, 7.0], [5.0, 5.0, 0.0, 0.0]])
    drawn = tn.multinomial(weights, 20000, replacement=True, generator=generator).numpy()
    frequencies = np.stack([np.bincount(row, minlength=4) / 20000 for row in drawn])
    np.testing.assert_allclose(frequencies, weights.numpy() / weights.numpy().sum(1, keepdims=True), atol=0.012)
    firsts = np.array([tn.multinomial(tn.tensor([1.0, 2.0, 7.0]), 3, generator=generator).numpy()
                       for _ in range(3000)])
    assert all(sorted(row) == [0, 1, 2] for row in firsts)  # without replacement: each category once
    np.testing.assert_allclose(np.bincount(firsts[:, 0], minlength=3) / 3000, [0.1, 0.2, 0.7], atol=0.025)
    # P(second = 0) = P(1 first) * 1/8 + P(2 first) * 1/3 (the first draw removed from the urn)
    np.testing.assert_allclose((firsts[:, 1] == 0).mean(), 0.2 / 8 + 0.7 / 3, atol=0.025)
    # Zero-weight categories come last, in index order, as PyTorch's do.
    assert tn.multinomial(tn.tensor([[0.0, 1.0, 0.0, 0.0]]), 4).numpy().tolist() == [[1, 0, 2, 3]]


@pytest.mark.parametrize("call, error, message", [
    (lambda: tn.randint(5, 5, (2,)), RuntimeError, "expected low < high, but got low=5 >= high=5"),
    (lambda: tn.randint(3), TypeError, r"randint: expected \(high, size\) or \(low, high, size\)"),
    (lambda: tn.randint(0, 3, 5), TypeError, "randint: expected"),
    (lambda: tn.randint(1.5, (2,)), TypeError, "high must be an int, got float"),
    (lambda: tn.randint(0, 300, (2,), dtype=np.uint8), RuntimeError, r"do not fit uint8"),
    (lambda: tn.randint(0, 2**25, (2,), dtype=tn.float32), RuntimeError, "do not fit float32"),
    (lambda: tn.randint(0, 5, (2,), requires_grad=True), RuntimeError, "floating point dtype can require"),
    (lambda: tn.randperm(-1), RuntimeError, "n must be non-negative, got -1"),
    (lambda: tn.normal(0.0, 1.0), TypeError, "pass the size"),
    (lambda: tn.normal(0.0, -1.0, (2,)), RuntimeError, "std must be >= 0, got -1"),
    (lambda: tn.normal(tn.zeros(2), tn.tensor([1.0, -2.0])), RuntimeError, "std must be >= 0, got -2"),
    (lambda: tn.normal(tn.zeros(2), float("nan")), RuntimeError, "std must be >= 0"),
    (lambda: tn.normal(tn.zeros(2), tn.ones(3)), RuntimeError, r"mean \(2,\) and std \(3,\) do not broadcast"),
    (lambda: tn.normal(tn.tensor([0, 1]), 1.0), TypeError, "mean must be a floating-point tensor, got dtype int64"),
    (lambda: tn.normal(tn.zeros(2), 1.0, (2,)), TypeError, "size, dtype, device and requires_grad are only"),
    (lambda: tn.normal(0.0, 1.0, (2,), dtype=tn.int64), TypeError, "normal: dtype must be a floating-point"),
    (lambda: tn.bernoulli(tn.tensor([1.5])), RuntimeError, "every probability must be in"),
    (lambda: tn.bernoulli(tn.tensor([float("nan")])), RuntimeError, "every probability must be in"),
    (lambda: tn.bernoulli(tn.zeros(2), 2.0), RuntimeError, r"p=2.0 has values outside"),
    (lambda: tn.bernoulli(tn.tensor([1, 0])), TypeError, "bernoulli: input must be a floating-point tensor"),
    (lambda: tn.bernoulli([0.5]), TypeError, "bernoulli: input must be a Tensor, got list"),
    (lambda: tn.multinomial(tn.tensor([1.0, 1.0]), 3), RuntimeError, "cannot draw 3 samples without replacement"),
    (lambda: tn.multinomial(tn.tensor([1.0, 1.0]), 0), RuntimeError, "num_samples must be positive, got 0"),
    (lambda: tn.multinomial(tn.tensor([-1.0, 1.0]), 1), RuntimeError, "inf, nan or a negative value"),
    (lambda: tn.multinomial(tn.tensor([float("inf"), 1.0]), 1), RuntimeError, "inf, nan or a negative value"),
    (lambda: tn.multinomial(tn.tensor([0.0, 0.0]), 1), RuntimeError, "sums to 0"),
    (lambda: tn.multinomial(tn.ones(2, 2, 2), 1), RuntimeError, r"1- or 2-dimensional, got shape \(2, 2, 2\)"),
    (lambda: tn.multinomial(tn.tensor([1, 2]), 1), TypeError, "floating-point tensor of weights, got dtype int64"),
    (lambda: tn.multinomial(tn.zeros(0), 1), RuntimeError, "no categories"),
    (lambda: tn.randn(2, generator=3), TypeError, "randn: generator must be a tinynorm.Generator, got int"),
    (lambda: tn.randperm(3, generator=tn.Generator("cuda")), RuntimeError,
     "expected a 'cpu' device type for generator but found 'cuda'"),
])
def test_random_functions_refuse_bad_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ----------------------------------------------------------------------------- generators
def test_generator_seeds_states_and_independence():
    generator = tn.Generator()
    assert generator.manual_seed(3) is generator and generator.initial_seed() == 3 and generator.device == "cpu"
    state = generator.get_state()
    assert state.dtype == np.uint8 and state.shape == (48,)
    first = tn.rand(5, generator=generator).numpy()
    assert generator.set_state(state) is generator
    np.testing.assert_array_equal(tn.rand(5, generator=generator).numpy(), first)
    np.testing.assert_array_equal(tn.rand(5, generator=tn.Generator().manual_seed(3)).numpy(), first)
    # The same stream as numpy's own generator with that seed: tinynorm draws with PCG64.
    np.testing.assert_array_equal(first, np.random.default_rng(3).random(5).astype(np.float32))
    seed = generator.seed()
    assert generator.initial_seed() == seed and 0 <= seed < 2**63
    assert generator.manual_seed(-1).initial_seed() == 2**64 - 1  # negative seeds wrap, as PyTorch's
    assert "initial_seed=" in repr(generator)


def test_global_generator_functions():
    assert isinstance(tn.manual_seed(11), tn.Generator) and tn.initial_seed() == 11
    state = tn.get_rng_state()
    first = tn.randn(4).numpy()
    tn.set_rng_state(state)
    np.testing.assert_array_equal(tn.randn(4).numpy(), first)
    assert tn.initial_seed() == 11
    assert tn.seed() == tn.initial_seed()


@pytest.mark.parametrize("call, error, message", [
    (lambda g: g.manual_seed(1.5), TypeError, "seed must be an int, got float"),
    (lambda g: g.manual_seed(2**64), ValueError, r"seed must be in \[-2\*\*63, 2\*\*64\)"),
    (lambda g: g.set_state(tn.zeros(3, dtype=np.uint8)), RuntimeError, "48 bytes, got 3"),
    (lambda g: g.set_state(tn.zeros(48)), TypeError, "uint8 tensor from get_state"),
    (lambda g: g.set_state(b"x" * 48), TypeError, "got bytes"),
    (lambda g: g.set_state(tn.zeros(48, dtype=np.uint8)), ValueError, "not a state returned"),
    (lambda g: tn.Generator("tpu"), ValueError, "device must be one of"),
])
def test_generator_refuses_bad_seeds_and_states(call, error, message):
    with pytest.raises(error, match=message):
        call(tn.Generator())


def test_float_widths_round_the_same_draws():
    """float32 draws of a generator state are its float64 draws, rounded."""
    wide = tn.rand(1000, dtype=tn.float64, generator=tn.Generator().manual_seed(5)).numpy()
    narrow = tn.rand(1000, dtype=tn.float32, generator=tn.Generator().manual_seed(5)).numpy()
    np.testing.assert_array_equal(narrow, wide.astype(np.float32))
    assert math.isclose(wide.mean(), 0.5, abs_tol=0.03)
