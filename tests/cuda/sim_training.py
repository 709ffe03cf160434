"""A few training steps of ``tinynorm.models.SmallCNN`` on ``device='cuda'`` (Numba's CUDA simulator)
match the same steps on the CPU: same losses, parameters and running statistics to float32 tolerance,
with the optimizer's state on the device.

Both models start from the same weights (built on the CPU, the state copied into a second model that
is then moved to CUDA) and fit the same batch. Small on purpose: the simulator runs one Python
thread per CUDA thread. Run by ``test_cuda_simulator.py`` in a subprocess with ``NUMBA_ENABLE_CUDASIM=1``.
"""
import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

import tinynorm
import tinynorm.nn.functional as F
from tinynorm.backends.cuda import CudaArray
from tinynorm.models import SmallCNN

STEPS, BATCH, SIZE, CLASSES = 3, 4, 4, 3
RTOL = 1e-4  # a few steps of float32 updates, summed in a different order on each device


def train(model: tinynorm.nn.Module, optimizer: tinynorm.optim.Optimizer, batches: list, device: str) -> list[float]:
    losses = []
    for images, labels in batches:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(tinynorm.tensor(images, device=device)), tinynorm.tensor(labels, device=device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_small_cnn_trains_the_same_on_cuda():
    tinynorm.manual_seed(0)
    cpu_model = SmallCNN(norm="batchnorm", width=2, num_classes=CLASSES)
    cuda_model = SmallCNN(norm="batchnorm", width=2, num_classes=CLASSES)
    cuda_model.load_state_dict(cpu_model.state_dict())
    cuda_model.to("cuda")
    rng = np.random.default_rng(1)
    batch = (rng.standard_normal((BATCH, 1, SIZE, SIZE)).astype(np.float32), rng.integers(0, CLASSES, BATCH))
    batches = [batch] * STEPS  # one batch, so that the loss must go down

    cpu_optimizer = tinynorm.optim.Adam(cpu_model.parameters(), lr=1e-2, weight_decay=1e-4)
    cuda_optimizer = tinynorm.optim.Adam(cuda_model.parameters(), lr=1e-2, weight_decay=1e-4)
    cpu_losses = train(cpu_model, cpu_optimizer, batches, "cpu")
    cuda_losses = train(cuda_model, cuda_optimizer, batches, "cuda")

    np.testing.assert_allclose(cuda_losses, cpu_losses, rtol=RTOL)
    assert cpu_losses[-1] < cpu_losses[0]  # it learns: the runs compared are not stuck
    cpu_state = cpu_model.state_dict()
    for name, value in cuda_model.state_dict().items():
        assert value.device == "cuda" and isinstance(value.data, CudaArray), name
        expected = cpu_state[name].numpy()
        scale = max(float(np.abs(expected).max()), 1e-3)
        np.testing.assert_allclose(value.numpy(), expected, rtol=RTOL, atol=RTOL * scale, err_msg=name)
    states = [v for state in cuda_optimizer.state.values() for v in state.values() if isinstance(v, tinynorm.Tensor)]
    assert len(cuda_optimizer.state) == len(list(cuda_model.parameters()))
    assert states and all(t.device == "cuda" and isinstance(t.data, CudaArray) for t in states)
