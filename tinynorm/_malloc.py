"""Keep freed memory for reuse, so that large temporary arrays do not page-fault on every step.

A training step allocates and frees arrays of megabytes (each op's output, each gradient). glibc's
``malloc`` serves a block above its mmap threshold with fresh ``mmap`` pages and returns them on
``free``; the threshold starts at 128 KiB and grows to the largest block freed so far, and the heap
gives memory back to the system once more than twice that is free at its top. A step that frees many
such arrays at once thus returns their pages, and the next step's arrays pay a page fault per 4 KiB on
first touch again; on a virtual machine that made a ReLU over a 3 MiB activation inside a SmallCNN
step about 5x slower than the same ReLU repeated alone (measured: docs/benchmarks.md).
:func:`configure`, run when tinynorm is imported, raises the mmap threshold to 32 MiB (glibc's maximum)
and the trim threshold to 1 GiB, so that freed blocks stay in the heap and the next array reuses pages
already mapped. The price is that the
process's resident memory shrinks only once more than 1 GiB is free at the top of a heap.

The settings are process-wide (PyTorch in the same process gets them too). Your own choice takes
precedence: nothing is changed when ``MALLOC_MMAP_THRESHOLD_`` or ``MALLOC_TRIM_THRESHOLD_`` is set
or ``GLIBC_TUNABLES`` names a ``glibc.malloc`` tunable, or when the C library is not glibc.
"""
from __future__ import annotations

import ctypes
import os

MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 1 << 30
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameters, from glibc's <malloc.h>

# Whether configure() changed the allocator's settings.
configured = False


def _chosen_by_user() -> bool:
    """Whether the environment sets glibc's malloc thresholds or tunables."""
    named = {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"} & os.environ.keys()
    return bool(named) or "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", "")


def configure() -> None:
    """Raise glibc's mmap and trim thresholds (module docstring) unless the user set their own."""
    global configured
    if _chosen_by_user():
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # no mallopt (macOS), no global handle (Windows)
        return
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    mmap_set = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    trim_set = mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    configured = bool(mmap_set and trim_set)
