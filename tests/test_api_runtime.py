"""The runtime API around tensors against PyTorch: ``finfo``/``iinfo``, memory layout (``stride``,
``storage_offset``, ``data_ptr``, ``itemsize``, ``nbytes``), ``is_signed``/``is_complex``,
``inference_mode``, ``tinynorm.accelerator``, ``set_num_threads`` and the ``backends.cudnn``/``mps``
switches scripts set.
"""
import threading

import numba
import numpy as np
import pytest
from api_compare import check, torch

import tinynorm as tn

X = [[1.5, -2.5, 3.25], [0.5, 2.0, -1.75]]


@pytest.fixture(params=["cpu"])
def device(request):
    return request.param


@pytest.mark.parametrize("name", ["float16", "float32", "float64", None])
def test_finfo_is_pytorchs(name):
    ours = tn.finfo() if name is None else tn.finfo(getattr(tn, name))
    theirs = torch.finfo() if name is None else torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ours, field) == getattr(theirs, field), field
        assert type(getattr(ours, field)) is type(getattr(theirs, field)), field
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8"])
def test_iinfo_is_pytorchs(name):
    ours, theirs = tn.iinfo(getattr(tn, name)), torch.iinfo(getattr(torch, name))
    assert (ours.bits, ours.min, ours.max, ours.dtype) == (theirs.bits, theirs.min, theirs.max, theirs.dtype)
    assert type(ours.max) is int and repr(ours) == repr(theirs)


@pytest.mark.parametrize("call", [lambda lib: lib.finfo(lib.int32), lambda lib: lib.iinfo(lib.float32),
                                  lambda lib: lib.iinfo(lib.bool), lambda lib: lib.finfo("float32"),
                                  lambda lib: lib.finfo(3), lambda lib: lib.iinfo(None)])
def test_type_info_refuses_what_pytorch_refuses(call):
    with pytest.raises(TypeError) as theirs:
        call(torch)
    with pytest.raises(TypeError) as ours:
        call(tn)
    assert str(ours.value) == str(theirs.value).replace("torch.", "tinynorm.")


def test_finfo_min_masks_as_in_pytorch(device):
    check(lambda lib, make: make(X).masked_fill(make(X) < 0, lib.finfo(lib.float32).min).softmax(-1), device)


VIEWS = [lambda t: t, lambda t: t.t(), lambda t: t[1:], lambda t: t[:, 1], lambda t: t[:, ::2], lambda t: t[1, 2],
         lambda t: t.permute(1, 0), lambda t: t.unsqueeze(1), lambda t: t[:1].expand(4, 3), lambda t: t.view(3, 2),
         lambda t: t.reshape(-1)[2:], lambda t: t.t().contiguous(), lambda t: t.transpose(0, 1)[1:]]


@pytest.mark.parametrize("view", VIEWS)
def test_memory_layout_is_pytorchs(view, device):
    check(lambda lib, make: (view(make(X)).stride(), view(make(X)).storage_offset(), view(make(X)).nbytes,
                             view(make(X)).itemsize, view(make(X)).is_contiguous()), device)


def test_stride_of_one_dim(device):
    check(lambda lib, make: (make(X).stride(0), make(X).t().stride(-1), make(3.0).stride()), device)
    check(lambda lib, make: make(X).stride(2), device)
    check(lambda lib, make: make(3.0).stride(0), device)


def test_data_ptr_tells_shared_memory_apart():
    x = tn.tensor(X)
    assert x.view(-1).data_ptr() == x.data_ptr() == x.numpy().ctypes.data
    assert x[1].data_ptr() - x.data_ptr() == 3 * x.element_size() and x.clone().data_ptr() != x.data_ptr()
    assert tn.empty(0).data_ptr() == 0 == torch.empty(0).data_ptr()


def test_signedness_and_complexity(device):
    check(lambda lib, make: (make(X).is_signed(), make([1, 2]).is_signed(), make([1], dtype="uint8").is_signed(),
                             make([True]).is_signed(), make(X).is_complex(), make(X).is_inference()), device)


def test_inference_mode_records_nothing_and_nests(device):
    x = tn.tensor(X, device=device, requires_grad=True)
    with tn.inference_mode():
        assert tn.is_inference_mode_enabled() and not tn.is_grad_enabled()
        y = x * 2
        with tn.inference_mode(False):
            z = x * 2
    assert not tn.is_inference_mode_enabled() and tn.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and z.requires_grad

    @tn.inference_mode()
    def predict(t):
        return t * 3

    assert not predict(x).requires_grad and tn.is_grad_enabled()
    with pytest.raises(TypeError, match="mode must be a bool"):
        tn.inference_mode(1)


def test_accelerator_reports_the_cuda_device():
    assert tn.accelerator.is_available() == tn.cuda.is_available()
    assert tn.accelerator.device_count() == tn.cuda.device_count() and tn.accelerator.current_device_index() == 0
    accelerator = tn.accelerator.current_accelerator()
    if tn.cuda.is_available():
        assert accelerator == tn.device("cuda") and accelerator.type == "cuda"
    else:
        assert accelerator is None
    device = accelerator.type if tn.accelerator.is_available() else "cpu"  # PyTorch's quickstart
    assert tn.ones(2, device=device).device.type == device


def test_num_threads_set_and_read_per_thread():
    before = tn.get_num_threads()
    try:
        tn.set_num_threads(1)
        assert tn.get_num_threads() == 1
        tn.set_num_threads(10_000)  # more than the pool: the whole pool
        assert tn.get_num_threads() == numba.config.NUMBA_NUM_THREADS
        seen = []
        worker = threading.Thread(target=lambda: seen.append(tn.get_num_threads()))
        tn.set_num_threads(1)
        worker.start()
        worker.join()
        assert tn.get_num_threads() == 1 and seen == [numba.config.NUMBA_NUM_THREADS]  # Numba's are per thread
    finally:
        tn.set_num_threads(before)
    for bad in (0, -1, 2.0):
        with pytest.raises(RuntimeError) as theirs:
            torch.set_num_threads(bad)
        with pytest.raises(RuntimeError) as ours:
            tn.set_num_threads(bad)
        assert str(ours.value) == str(theirs.value)


def test_backend_switches_scripts_set():
    assert tn.backends.mps.is_available() is False and tn.backends.mps.is_built() is False
    assert tn.backends.cudnn.is_available() is False and tn.backends.cudnn.version() is None
    saved = tn.backends.cudnn.benchmark, tn.backends.cudnn.deterministic
    try:
        tn.backends.cudnn.benchmark, tn.backends.cudnn.deterministic = True, True
        assert tn.backends.cudnn.benchmark and tn.backends.cudnn.deterministic
    finally:
        tn.backends.cudnn.benchmark, tn.backends.cudnn.deterministic = saved


def test_out_writes_into_the_given_tensor(device):
    def case(lib, make):
        a, b = make(X), make([[1.0, 0.5], [2.0, -1.0], [0.0, 3.0]])
        product, doubled, joined, total = make([[0.0] * 2] * 2), make([[0.0] * 3] * 2), make([]), make([0.0, 0.0])
        results = (lib.matmul(a, b, out=product), lib.mul(a, 2, out=doubled), lib.cat([a, a], out=joined),
                   lib.sum(a, 1, out=total), lib.add(make([1, 2]), make([3, 4]), out=make([0.0, 0.0])))
        return results, results[0] is product, results[2] is joined, product, joined.shape

    check(case, device)
    check(lambda lib, make: lib.add(make([1.0]), make([2.0]), out=make([0])), device)  # float into long
    check(lambda lib, make: lib.mul(make([1.0], requires_grad=True), 2, out=make([0.0])), device)


POSITIVE = [[0.5, 1.5, 3.0], [0.25, 2.0, 4.5]]
UNARY_WITH_OUT = ["abs", "absolute", "acosh", "asinh", "atan", "ceil", "cos", "cosh", "deg2rad", "erf", "exp", "exp2",
                  "expm1", "fix", "floor", "frac", "log", "log1p", "log2", "neg", "negative", "rad2deg", "reciprocal",
                  "round", "rsqrt", "sgn", "sigmoid", "sign", "sin", "sinh", "sqrt", "square", "tan", "tanh", "trunc",
                  "nan_to_num", "logical_not", "isposinf", "isneginf", "cumsum", "cumprod", "sum", "mean", "prod",
                  "nansum", "amax", "amin", "argmax", "argmin", "std", "var", "logsumexp", "norm", "any", "all"]
BINARY_WITH_OUT = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "atan2", "arctan2",
                   "hypot", "logaddexp", "xlogy", "maximum", "minimum", "pow", "remainder", "fmod", "float_power",
                   "floor_divide", "eq", "ne", "not_equal", "lt", "less", "le", "less_equal", "gt", "greater", "ge",
                   "greater_equal", "logical_and", "logical_or", "logical_xor"]
DIM_FIRST = {"cumsum", "cumprod", "logsumexp", "sum", "prod"}  # PyTorch takes out= only with a dim there


@pytest.mark.parametrize("name", UNARY_WITH_OUT)
def test_out_of_one_argument_functions(name, device):
    def case(lib, make):
        x = make(POSITIVE)
        result = getattr(lib, name)(x, 1) if name in DIM_FIRST else getattr(lib, name)(x)
        out = make([]) if result.dtype.is_floating_point else make([], dtype=str(result.dtype).split(".")[-1])
        written = getattr(lib, name)(x, 1, out=out) if name in DIM_FIRST else getattr(lib, name)(x, out=out)
        return written, written is out

    check(case, device)


@pytest.mark.parametrize("name", BINARY_WITH_OUT)
def test_out_of_two_argument_functions(name, device):
    first, second = (X, POSITIVE) if name == "xlogy" else (POSITIVE, X)  # logarithms of positive numbers

    def case(lib, make):
        result = getattr(lib, name)(make(first), make(second))
        out = make([[0.0] * 3] * 2, dtype=str(result.dtype).split(".")[-1])
        return getattr(lib, name)(make(first), make(second), out=out) is out, out

    check(case, device)


FILLS = [("exponential_", (2.0,), 0.5, 0.25), ("geometric_", (0.25,), 4.0, 12.0), ("log_normal_", (0.0, 0.5),
         float(np.exp(0.125)), float((np.exp(0.25) - 1) * np.exp(0.25))), ("random_", (3,), 1.0, 2 / 3),
         ("random_", (-2, 2), -0.5, 1.25)]


@pytest.mark.parametrize("name, arguments, mean, variance", FILLS)
def test_random_fills_draw_pytorchs_distributions(name, arguments, mean, variance, device):
    n = 20_000 if device == "cpu" else 4_000  # the CUDA simulator runs every element's thread in Python
    x = tn.empty(n, dtype=tn.float64, device=device)
    tn.manual_seed(3)
    assert getattr(x, name)(*arguments) is x and x._version == 1
    samples = x.numpy()
    # Mean and variance within five standard errors (the variance's from the sample's fourth moment).
    assert abs(samples.mean() - mean) < 5 * np.sqrt(variance / n)
    fourth = np.mean((samples - samples.mean()) ** 4)
    assert abs(samples.var() - variance) < 5 * np.sqrt((fourth - samples.var() ** 2) / n)
    tn.manual_seed(3)
    assert np.array_equal(getattr(tn.empty(n, dtype=tn.float64, device=device), name)(*arguments).numpy(), samples)
    if name == "random_":  # the same values can come out, as in PyTorch
        theirs = getattr(torch.empty(n, dtype=torch.float64), name)(*arguments).numpy()
        assert np.array_equal(np.unique(theirs), np.unique(samples))


def test_cauchy_and_integer_fills(device):
    n = 20_000 if device == "cpu" else 4_000  # the CUDA simulator runs every element's thread in Python
    spread = np.sqrt(20_000 / n)  # the tolerances below are about four standard errors at n = 20,000
    x = tn.empty(n, device=device).cauchy_(1.0, 2.0, generator=tn.Generator(device).manual_seed(0))
    assert abs(float(np.median(x.numpy())) - 1.0) < 0.1 * spread  # a Cauchy has no mean: its median is the location
    assert abs(float(np.percentile(x.numpy(), 75)) - 3.0) < 0.15 * spread  # median + scale
    ints = tn.empty(1000, dtype=tn.int64, device=device).random_()
    assert ints.dtype == tn.int64 and ints.numpy().min() >= 0 and ints.numpy().max() > 2 ** 60
    assert set(tn.empty(500, dtype=tn.bool, device=device).random_().tolist()) == {False, True}


@pytest.mark.parametrize("call", [lambda t, lib: t.exponential_(0), lambda t, lib: t.geometric_(1.5),
                                  lambda t, lib: t.cauchy_(0, -1), lambda t, lib: t.log_normal_(0, -1),
                                  lambda t, lib: t.random_(5, 2),
                                  lambda t, lib: lib.empty(3, dtype=lib.uint8).random_(300)])
def test_random_fills_refuse_what_pytorch_refuses(call):
    with pytest.raises(RuntimeError) as theirs:
        call(torch.empty(3), torch)
    with pytest.raises(RuntimeError) as ours:
        call(tn.empty(3), tn)
    assert str(ours.value).replace("tinynorm.uint8", "unsigned char") == str(theirs.value)
