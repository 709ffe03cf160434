"""The runtime API around tensors against PyTorch: ``finfo``/``iinfo``, memory layout (``stride``,
``storage_offset``, ``data_ptr``, ``itemsize``, ``nbytes``), ``is_signed``/``is_complex``,
``inference_mode``, ``tinynorm.accelerator``, ``set_num_threads`` and the ``backends.cudnn``/``mps``
switches scripts set.
"""
import threading

import numba
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
