"""tinynorm's speed does not depend on what the process imported before it (tinynorm/_openmp.py).

With PyTorch imported first, its OpenMP runtime used to serve tinynorm's parallel kernels with libgomp's
long default spin: after each kernel an idle worker burned 3.5-7.5 ms of CPU instead of ~0.05 ms, and a
loop mixing matrix products and LayerNorm took 4-12x the CPU time. Each order runs in its own process and
reports CPU time, which counts its own spinning threads but not other processes. The step's bound is
generous because the machines running the tests are shared (the trap is far outside it); the benchmark
``tinynorm bench import-order`` measures the real ratio.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

# Prints the CPU milliseconds that idle threads burn in 0.2 s after a parallel kernel (median of 5), the
# least CPU milliseconds of a step mixing BLAS (matmul) and a parallel kernel (LayerNorm), and how the
# OpenMP layer was loaded.
SCRIPT = """
import sys, time
if sys.argv[1] == "torch-first":
    import torch
import numpy as np
import tinynorm
import tinynorm.nn.functional as F
x = tinynorm.randn(64, 1024)
a = tinynorm.randn(256, 256)
def step():
    for _ in range(5):
        a @ a
        F.layer_norm(x, (1024,))
def cpu_ms(fn, calls):
    start = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - start) / calls * 1e3
def idle_after_kernel():
    F.layer_norm(x, (1024,))
    return cpu_ms(lambda: time.sleep(0.2), 1)
step_ms = min(cpu_ms(step, 10) for _ in range(8))
idle_ms = np.median([idle_after_kernel() for _ in range(5)])
print(idle_ms, step_ms, tinynorm._openmp.layer_load)
"""


def measure(order: str) -> tuple[float, float, str]:
    env = {**os.environ, "NUMBA_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"}
    for name in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY", "OMP_NUM_THREADS"):
        env.pop(name, None)  # what a user gets by default
    result = subprocess.run([sys.executable, "-c", SCRIPT, order], capture_output=True, text=True, env=env,
                            timeout=300, check=True)
    idle_ms, step_ms, layer_load = result.stdout.split()
    return float(idle_ms), float(step_ms), layer_load


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the trap needs two threads that compete for cores")
def test_importing_torch_first_does_not_slow_tinynorm() -> None:
    idle_torch_first, step_torch_first, how = measure("torch-first")
    idle_tinynorm_first, step_tinynorm_first, plain = measure("tinynorm-first")
    assert (how, plain) == ("deepbind", "plain")
    assert idle_torch_first < 1.0 and idle_tinynorm_first < 1.0, (idle_torch_first, idle_tinynorm_first)
    assert step_torch_first < 2 * step_tinynorm_first, (step_torch_first, step_tinynorm_first)
