"""Importing tinynorm shortens the spin of numpy's OpenBLAS threads (tinynorm/_openblas.py), even when numpy
was imported and used first, and leaves a spin the user chose alone.

Each case runs in a fresh process: a threaded 512x512 product, then 0.2 s asleep, during which the
process's CPU time counts what OpenBLAS's idle threads burn (OpenBLAS's default spin, 2^28 cycles,
burns about 0.1 s per thread)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("threadpoolctl")

PROBE = """
import json, os, sys, threading, time
if sys.argv[1] == "tinynorm-first":
    import tinynorm
import numpy as np
a = np.ones((512, 512))
a @ a  # numpy's OpenBLAS loaded and its pool started with the environment's spin
stop = threading.Event()
if sys.argv[1] == "tinynorm-beside-a-thread":  # a product may be running: no restart
    worker = threading.Thread(target=lambda: [a @ a for _ in iter(stop.is_set, True)])
    worker.start()
if sys.argv[1].startswith("tinynorm"):
    import tinynorm
    from tinynorm import _openblas
    configured = _openblas.configured
else:
    configured = None
stop.set()
from threadpoolctl import threadpool_info
threads = max(p["num_threads"] for p in threadpool_info() if p["internal_api"] == "openblas")
idle = []
for _ in range(3):
    a @ a
    start = time.process_time()
    time.sleep(0.2)
    idle.append((time.process_time() - start) * 1e3)
print(json.dumps({"idle_cpu_ms": min(idle), "threads": threads, "configured": configured,
                  "timeout": os.environ.get("OPENBLAS_THREAD_TIMEOUT")}))
"""


def probe(what: str, **env: str) -> dict:
    environment = {key: value for key, value in os.environ.items() if key != "OPENBLAS_THREAD_TIMEOUT"}
    result = subprocess.run([sys.executable, "-c", PROBE, what], capture_output=True, text=True, check=True,
                            env={**environment, "OPENBLAS_NUM_THREADS": "2", **env}, timeout=120)
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("order", ["tinynorm", "tinynorm-first"])
def test_tinynorm_shortens_the_spin_of_openblas(order: str) -> None:
    """Imported after numpy (the pool restarted) or before it (OpenBLAS reads the variable itself)."""
    without = probe("numpy")
    if without["threads"] < 2 or without["idle_cpu_ms"] < 20:
        pytest.skip(f"numpy's BLAS does not spin here ({without})")
    ours = probe(order)
    assert ours["configured"] is True and ours["timeout"] == "20"
    assert ours["idle_cpu_ms"] < 5, (ours, without)


def test_no_restart_while_another_thread_may_be_in_a_product() -> None:
    ours = probe("tinynorm-beside-a-thread")  # a restart there could wait forever (the timeout fails it)
    assert ours["configured"] is False and ours["timeout"] is None


def test_a_spin_chosen_by_the_user_is_left_alone() -> None:
    ours = probe("tinynorm", OPENBLAS_THREAD_TIMEOUT="28")
    assert ours["configured"] is False and ours["timeout"] == "28"
