"""``set_default_device``/``get_default_device``: where factory functions put tensors given no device.
The CUDA half runs in the simulator (``tests/cuda/sim_default_device.py``)."""
import pytest

import tinynorm as tn


@pytest.fixture(autouse=True)
def restore_default_device():
    yield
    tn.set_default_device(None)


def test_the_default_is_the_cpu_and_none_means_it():
    assert tn.get_default_device() == "cpu" and repr(tn.get_default_device()) == "device(type='cpu')"
    assert tn.zeros(2, device=None).device == "cpu" and tn.tensor([1.0], device=None).device == "cpu"


def test_an_unknown_device_is_refused_and_the_default_kept():
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda device type at start of device string: xpu"):
        tn.set_default_device("xpu")
    assert tn.get_default_device() == "cpu"


def test_matches_torch_on_the_cpu():
    torch = pytest.importorskip("torch")
    torch.set_default_device("cpu")
    tn.set_default_device("cpu")
    assert str(tn.get_default_device()) == str(torch.get_default_device())
    assert str(tn.randn(2).device) == str(torch.randn(2).device)
    torch.set_default_device(None)
