"""Every CUDA norm kernel against :mod:`tinynorm.kernels.reference`, the formulas in plain numpy, in
Numba's CUDA simulator: one small float32 case each (``test_cuda_simulator.py`` runs this file with
``NUMBA_ENABLE_CUDASIM=1``). The CPU kernels meet the same references in
``tests/kernels/test_norm_kernels.py``; the CUDA kernels' paths and dtypes are covered in
``sim_norm_kernels.py``. Gradients use a random upstream gradient.
"""
import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

from host_arrays import OnDevice, host, to_device  # noqa: E402  (after the simulator check)
from tinynorm.kernels import cuda as kernels  # noqa: E402
from tinynorm.kernels import reference as R  # noqa: E402

K = OnDevice(kernels)  # the kernels take device arrays: host data is copied over first
EPS = 1e-5
TOLERANCE = 3e-5


def assert_close(actual, expected):
    """A device array within float32 rounding of the float64 reference, scaled by the reference's size."""
    actual = host(actual)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=TOLERANCE, atol=TOLERANCE * max(1.0, np.abs(expected).max()))


def data(seed, shape, loc=0.5, scale=2.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale + loc).astype(np.float32)


def test_layer_norm_forward_and_backward():
    x, dy, w, b = data(0, (6, 40)), data(1, (6, 40)), data(2, 40, 1.0, 0.5), data(3, 40)
    y, mean, rstd = K.layer_norm_forward(x, w, b, EPS)
    y_ref, mean_ref, rstd_ref = R.layer_norm_forward(x, w, b, EPS)
    for got, want in zip((y, mean, rstd), (y_ref, mean_ref, rstd_ref)):
        assert_close(got, want)
    for got, want in zip(K.layer_norm_backward(dy, x, mean, rstd, w), R.layer_norm_backward(dy, x, mean_ref, rstd_ref, w)):
        assert_close(got, want)


def test_rms_norm_forward_and_backward():
    x, dy, w = data(4, (6, 40)), data(5, (6, 40)), data(6, 40, 1.0, 0.5)
    y, rstd = K.rms_norm_forward(x, w, EPS)
    y_ref, rstd_ref = R.rms_norm_forward(x, w, EPS)
    assert_close(y, y_ref)
    assert_close(rstd, rstd_ref)
    for got, want in zip(K.rms_norm_backward(dy, x, rstd, w), R.rms_norm_backward(dy, x, rstd_ref, w)):
        assert_close(got, want)


@pytest.mark.parametrize("groups", [2, 4], ids=["group_norm", "instance_norm"])
def test_group_and_instance_norm_forward_and_backward(groups):
    x, dy, w, b = data(7, (2, 4, 10)), data(8, (2, 4, 10)), data(9, 4, 1.0, 0.5), data(10, 4)
    y, mean, rstd = K.group_norm_forward(x, groups, w, b, EPS)
    y_ref, mean_ref, rstd_ref = R.group_norm_forward(x, groups, w, b, EPS)
    for got, want in zip((y, mean, rstd), (y_ref, mean_ref, rstd_ref)):
        assert_close(got, want)
    for got, want in zip(K.group_norm_backward(dy, x, mean, rstd, groups, w),
                         R.group_norm_backward(dy, x, mean_ref, rstd_ref, groups, w)):
        assert_close(got, want)


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_batch_norm_statistics_forward_and_backward(training):
    x, dy, w, b = data(11, (4, 3, 10)), data(12, (4, 3, 10)), data(13, 3, 1.0, 0.5), data(14, 3)
    if training:
        mean, var = K.batch_norm_stats(x)
        mean_ref, var_ref = R.batch_norm_stats(x)
        assert_close(mean, mean_ref)
        assert_close(var, var_ref)
    else:
        mean = mean_ref = np.full(3, 0.3, np.float32)
        var, var_ref = np.full(3, 1.7, np.float32), np.full(3, 1.7)
    rstd, rstd_ref = K.batch_norm_rstd(var, EPS), 1 / np.sqrt(var_ref + EPS)
    assert_close(rstd, rstd_ref)
    assert_close(K.batch_norm_forward(x, mean, rstd, w, b), R.batch_norm_forward(x, mean_ref, rstd_ref, w, b))
    for got, want in zip(K.batch_norm_backward(dy, x, mean, rstd, w, training),
                         R.batch_norm_backward(dy, x, mean_ref, rstd_ref, w, training)):
        assert_close(got, want)


def test_batch_norm_running_update():
    rng = np.random.default_rng(15)
    running_mean, running_var = data(16, 3), rng.uniform(0.5, 2.0, 3).astype(np.float32)
    mean, var = data(17, 3), rng.uniform(0.1, 3.0, 3).astype(np.float32)
    want = R.batch_norm_update_running(running_mean, running_var, mean, var, 40, 0.25)
    device_mean, device_var = to_device(running_mean), to_device(running_var)
    K.batch_norm_update_running(device_mean, device_var, mean, var, 40, 0.25)
    assert_close(device_mean, want[0])
    assert_close(device_var, want[1])
