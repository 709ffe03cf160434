"""Keep OpenBLAS's idle threads from spinning long beside tinynorm's parallel kernels.

numpy's OpenBLAS runs a large matrix product on its own thread pool; afterwards each pool thread spins,
waiting for the next product, for 2^28 cycles (about 0.1 s) before it sleeps. On a few cores those
spinning threads take the cores from the Numba kernels that follow a product (a GELU right after a
GEMM ran twice as long), and a Transformer step lost 15-20% to them (measured: docs/benchmarks.md).
OpenBLAS reads the spin (``OPENBLAS_THREAD_TIMEOUT``, 2^N cycles) when it is loaded, by
``import numpy``. So :func:`configure`, run when tinynorm is imported, sets it to 2^20 cycles (a
fraction of a millisecond); if numpy was imported already, it also has OpenBLAS read its environment
again and restarts its thread pool, so that the new spin takes effect. The restart waits for the pool's
threads to finish, so it is skipped while other Python threads run (one of them may be inside a
product); threads started outside Python cannot be seen.

The setting is process-wide (numpy's products elsewhere in the process get it too). Your own choice
takes precedence: nothing is changed when ``OPENBLAS_THREAD_TIMEOUT`` is set, and there is no restart
when numpy's BLAS is not OpenBLAS on its own threads or does not export the functions used
(``openblas_read_env``, ``blas_thread_shutdown_``, ``blas_thread_init``: internal to OpenBLAS, but
exported by its builds).
"""
from __future__ import annotations

import os
import sys
import threading

THREAD_TIMEOUT = "20"  # 2^20 cycles: 0.4 ms at 2.6 GHz
_FUNCTIONS = ("openblas_read_env", "blas_thread_shutdown_", "blas_thread_init")

# Whether configure() set the spin (OpenBLAS loaded afterwards, or restarted to read it).
configured = False


def _numpy_openblas():
    """The ctypes handle of numpy's OpenBLAS on its own threads, or None (another BLAS or threading, or
    no threadpoolctl to find it)."""
    try:
        from threadpoolctl import ThreadpoolController

        controllers = ThreadpoolController().lib_controllers
    except Exception:  # noqa: BLE001  (not installed, in the source checkout, or failing: no restart)
        return None
    for controller in controllers:
        if controller.internal_api == "openblas" and "numpy" in controller.filepath:
            # A build on OpenMP threads has no pool of its own (its spin is OpenMP's).
            return controller.dynlib if controller.threading_layer == "pthreads" else None
    return None


def configure() -> None:
    """Shorten OpenBLAS's idle spin (module docstring) unless the user chose one."""
    global configured
    if "OPENBLAS_THREAD_TIMEOUT" in os.environ:
        return
    if "numpy" not in sys.modules:  # OpenBLAS is not loaded yet: it will read the variable itself
        os.environ["OPENBLAS_THREAD_TIMEOUT"] = THREAD_TIMEOUT
        configured = True
        return
    if threading.active_count() > 1:
        return
    library = _numpy_openblas()
    if library is None or not all(hasattr(library, name) for name in _FUNCTIONS):
        return
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = THREAD_TIMEOUT
    library.openblas_read_env()
    library.blas_thread_shutdown_()  # the pool reads the spin when it starts
    library.blas_thread_init()
    configured = True
