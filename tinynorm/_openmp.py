"""How tinynorm's parallel kernels get their OpenMP runtime, whatever the process imported before.

Numba's parallel kernels run on its ``omp`` threading layer, a small extension (``omppool``) linked
against GNU OpenMP (libgomp). Two facts decide which libgomp it uses:

- An idle libgomp thread spins before it sleeps, and libgomp reads how long (``GOMP_SPINCOUNT``,
  ``OMP_WAIT_POLICY``) once, when it is loaded. Its default spin (300,000 iterations) starves OpenBLAS,
  which runs tinynorm's matrix products on the same cores; tinynorm sets a short one.
- PyTorch loads its own libgomp into the process's global symbol scope (``RTLD_GLOBAL``). Loaded after
  it, ``omppool`` binds to that copy, already initialised with the default spin: a Transformer step
  mixing GEMMs and parallel kernels then runs several times slower than with tinynorm imported first.

So :func:`configure`, run when tinynorm is imported, sets the short spin unless you chose your own and
loads ``omppool`` at once; if another OpenMP runtime already sits in the global scope it loads it with
``RTLD_DEEPBIND``, so that its symbols resolve to its own libgomp, initialised now with tinynorm's
settings. Without a foreign runtime (the usual case) it is a plain import, so that allocator
interposition (``LD_PRELOAD``), which ``RTLD_DEEPBIND`` would bypass, keeps working.
"""
from __future__ import annotations

import ctypes
import os
import sys

# Numba's threading-layer choices under which it may pick its OpenMP layer.
_OMP_CAPABLE_LAYERS = {"default", "omp", "threadsafe", "forksafe"}


def foreign_openmp_loaded() -> bool:
    """Whether an OpenMP runtime's entry point is already visible in the process's global symbol scope."""
    try:
        return hasattr(ctypes.CDLL(None), "GOMP_parallel")
    except OSError:  # no global handle on this platform
        return False


# How configure() loaded the layer: 'deepbind' (another runtime was in the global scope, omppool was
# isolated from it), 'plain', or 'skipped' (another threading layer is configured, omppool was already
# loaded, the platform has no RTLD_DEEPBIND, or there is no libgomp).
layer_load: str | None = None
# Whether configure() set GOMP_SPINCOUNT itself (nothing was set), and whether PyTorch was imported
# before tinynorm (then its OpenMP runtime read the environment before tinynorm could set anything).
spin_set_by_tinynorm = False
torch_imported_first = False


def configure() -> None:
    """Set tinynorm's OpenMP spin default, then load Numba's OpenMP layer on its own libgomp (see above).

    Idle OpenMP threads and OpenBLAS's threads share the cores. libgomp's default spin starves BLAS on a
    busy machine, while sleeping at once (``OMP_WAIT_POLICY=passive``) costs each parallel kernel a
    wake-up on a quiet one; a short spin keeps both fast (measured: docs/benchmarks.md). Your own
    ``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY`` takes precedence.
    """
    global layer_load, spin_set_by_tinynorm, torch_imported_first
    torch_imported_first = "torch" in sys.modules
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = "3000"
        spin_set_by_tinynorm = True
    layer_load = _load_openmp_layer()


def _load_openmp_layer() -> str:
    import numba

    if "numba.np.ufunc.omppool" in sys.modules or not hasattr(os, "RTLD_DEEPBIND"):
        return "skipped"
    if str(numba.config.THREADING_LAYER).lower() not in _OMP_CAPABLE_LAYERS:
        return "skipped"
    isolate = foreign_openmp_loaded()
    flags = sys.getdlopenflags()
    if isolate:
        sys.setdlopenflags(flags | os.RTLD_DEEPBIND)
    try:
        from numba.np.ufunc import omppool  # noqa: F401  (loading it is the point)
    except ImportError:  # no libgomp on this machine: Numba picks another layer
        return "skipped"
    finally:
        sys.setdlopenflags(flags)
    return "deepbind" if isolate else "plain"


def threading_settings() -> dict[str, object]:
    """The settings tinynorm's parallel kernels and BLAS run with, for benchmarks to print."""
    import numba

    try:
        layer = numba.threading_layer()
    except ValueError:  # known only once a parallel kernel has run
        layer = None
    return {
        "numba_threads": numba.get_num_threads(),
        "numba_threading_layer": layer,
        "openmp_layer_load": layer_load,
        "torch_imported_first": torch_imported_first,
        "GOMP_SPINCOUNT": os.environ.get("GOMP_SPINCOUNT"),
        "GOMP_SPINCOUNT_set_by_tinynorm": spin_set_by_tinynorm,
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
    }
