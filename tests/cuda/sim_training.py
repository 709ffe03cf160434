"""A few training steps of ``tinynorm.models.SmallCNN`` on ``device='cuda'`` (Numba's CUDA simulator)
match the same steps on the CPU: same losses, parameters and running statistics to float32 tolerance,
with the optimizer's state on the device. And a training step makes the host wait for the GPU only
where an index must be checked.

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
from tinynorm.models import SmallCNN, TinyTransformerLM

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
        assert value.device == "cuda" and isinstance(value.array, CudaArray), name
        expected = cpu_state[name].numpy()
        scale = max(float(np.abs(expected).max()), 1e-3)
        np.testing.assert_allclose(value.numpy(), expected, rtol=RTOL, atol=RTOL * scale, err_msg=name)
    states = [v for state in cuda_optimizer.state.values() for v in state.values() if isinstance(v, tinynorm.Tensor)]
    assert len(cuda_optimizer.state) == len(list(cuda_model.parameters()))
    assert states and all(t.device == "cuda" and isinstance(t.array, CudaArray) for t in states)


def _transfers_in_one_step(monkeypatch, model, images, labels) -> tuple[int, int]:
    """Device-to-host reads and host-to-device copies in a training step after the first: each one makes
    the host wait for the GPU (a copy from pageable host memory starts with a stream synchronize)."""
    device_array_type = type(numba.cuda.device_array(1))
    copy_to_host, to_device = device_array_type.copy_to_host, numba.cuda.to_device
    reads, copies = [], []

    def counting_copy_to_host(self, *args, **kwargs):
        reads.append(self.size)
        return copy_to_host(self, *args, **kwargs)

    def counting_to_device(array, *args, **kwargs):
        copies.append(array)
        return to_device(array, *args, **kwargs)

    optimizer = tinynorm.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(2):
        if step:
            monkeypatch.setattr(device_array_type, "copy_to_host", counting_copy_to_host)
            monkeypatch.setattr(numba.cuda, "to_device", counting_to_device)
        optimizer.zero_grad()
        logits = model(images)
        F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)).backward()
        optimizer.step()
    monkeypatch.undo()
    assert all(size == 2 for size in reads), reads  # never tensor data: an index check's two counts each
    return len(reads), len(copies)


def test_a_training_step_waits_for_the_gpu_only_for_index_checks(monkeypatch):
    """TinyTransformerLM reads back the token ids' range check (embedding) and the targets'
    (cross_entropy); the position table is sliced, and the embedding's lookup and gradient and the loss's
    pick reuse those checks. SmallCNN reads back the targets' check: max-pool backward's check of its
    argmax is skipped in training, where the argmax is the forward's own. Before: 8 and 3 reads. Flags
    and zeros are filled on the device, so nothing is copied to it either (before: 7 and 2 copies)."""
    rng = np.random.default_rng(2)
    tinynorm.manual_seed(0)
    model = TinyTransformerLM(vocab=5, d_model=4, n_heads=2, n_layers=1, block_size=4).to("cuda")
    ids, targets = (tinynorm.tensor(rng.integers(0, 5, (1, 3)), device="cuda") for _ in range(2))
    assert _transfers_in_one_step(monkeypatch, model, ids, targets) == (2, 0)
    model = SmallCNN(norm="batchnorm", width=2, num_classes=CLASSES).to("cuda")
    images = tinynorm.tensor(rng.standard_normal((2, 1, SIZE, SIZE)).astype(np.float32), device="cuda")
    labels = tinynorm.tensor(rng.integers(0, CLASSES, 2), device="cuda")
    assert _transfers_in_one_step(monkeypatch, model, images, labels) == (1, 0)
