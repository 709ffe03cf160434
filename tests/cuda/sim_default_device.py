"""``set_default_device('cuda')`` puts every factory function's tensor and a new layer's parameters on the
CUDA device, in Numba's simulator (``test_cuda_simulator.py`` runs this file)."""
import numba
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

import tinynorm as tn  # noqa: E402


@pytest.fixture(autouse=True)
def on_cuda_by_default():
    tn.set_default_device("cuda")
    yield
    tn.set_default_device(None)


def test_factories_and_layers_follow_the_default_device():
    made = [tn.zeros(2), tn.ones(2), tn.empty(2), tn.full((2,), 3.0), tn.randn(2), tn.rand(2), tn.arange(3),
            tn.tensor([1, 2]), tn.as_tensor([1.0]), tn.randint(0, 5, (2,)), tn.eye(2), tn.linspace(0, 1, 3)]
    assert {t.device for t in made} == {"cuda"}
    assert repr(tn.get_default_device()) == "device(type='cuda', index=0)"
    layer = tn.nn.Linear(2, 3)
    out = layer(tn.randn(4, 2))
    out.backward(tn.randn(4, 3))
    assert out.device == "cuda" and layer.weight.grad.device == "cuda"


def test_an_explicit_device_still_wins_and_none_restores_the_cpu():
    assert tn.zeros(2, device="cpu").device == "cpu"
    tn.set_default_device(None)
    assert tn.zeros(2).device == "cpu"
