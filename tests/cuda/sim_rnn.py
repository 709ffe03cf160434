"""The recurrent layers on ``device='cuda'`` (Numba's CUDA simulator) compute what they compute on the CPU:
outputs, final states and every gradient of LSTM, GRU, RNN and the LayerNorm-LSTM, with initial states.

The cell ops are array math on the device's backend, so this checks that the CUDA backend gives them
everything they use (slices, tanh, concatenate, the matrix products, LayerNorm). Tiny sizes: the simulator
runs one Python thread per CUDA thread. Run by ``test_cuda_simulator.py`` with ``NUMBA_ENABLE_CUDASIM=1``.
"""
import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

import tinynorm
from tinynorm import nn

RTOL, ATOL = 1e-5, 1e-6


def run(layer: nn.Module, x: np.ndarray, states: list, grad: np.ndarray, device: str) -> list[np.ndarray]:
    xt = tinynorm.tensor(x, device=device, requires_grad=True)
    given = [tinynorm.tensor(s, device=device, requires_grad=True) for s in states]
    hx = tuple(given) if len(given) == 2 else given[0]
    output, final = layer(xt, hx)
    finals = final if isinstance(final, tuple) else (final,)
    loss = (output * tinynorm.tensor(grad, device=device)).sum() + sum(f.sum() for f in finals)
    loss.backward()
    return [output.numpy(), *(f.numpy() for f in finals), xt.grad.numpy(), *(g.grad.numpy() for g in given),
            *(p.grad.numpy() for p in layer.parameters())]


@pytest.mark.parametrize("kind, kwargs", [("LSTM", {"bidirectional": True}), ("GRU", {"num_layers": 2}),
                                          ("RNN", {"nonlinearity": "relu"}), ("LayerNormLSTM", {})])
def test_recurrent_layer_on_cuda_equals_cpu(kind, kwargs):
    tinynorm.manual_seed(0)
    cpu = getattr(nn, kind)(3, 4, **kwargs)
    device = getattr(nn, kind)(3, 4, **kwargs)
    device.load_state_dict(cpu.state_dict())
    device.to("cuda")
    rng = np.random.default_rng(0)
    count = cpu.num_layers * cpu.num_directions
    x = rng.standard_normal((3, 2, 3)).astype(np.float32)
    states = [rng.standard_normal((count, 2, 4)).astype(np.float32) for _ in cpu._state_sizes()]
    grad = rng.standard_normal((3, 2, 4 * cpu.num_directions)).astype(np.float32)
    for want, got in zip(run(cpu, x, states, grad, "cpu"), run(device, x, states, grad, "cuda"), strict=True):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
