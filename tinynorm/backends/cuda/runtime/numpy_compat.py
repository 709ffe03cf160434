"""numba-cuda 0.30 with numpy 2.5: the one change it needs, made before its first compile.

numba-cuda 0.30.4 (in maintenance mode, NVIDIA/numba-cuda#902) registers an overload of
``np.row_stack`` when its array registry (``numba.cuda.np.arrayobj``) is first imported, which happens
at the first compile. numpy 2.5 removed ``row_stack``, so that import raises ``AttributeError`` and no
kernel compiles; numba itself registers the overload only for numpy < 2.5 (numba 0.67 and later).
:func:`apply` imports the registry once with a stand-in ``np.row_stack`` and removes the stand-in right
after: numba-cuda compiles, and numpy's namespace stays numpy 2.5's. On numpy < 2.5, after the registry
was imported, in Numba's simulator (which compiles nothing) or with another compiler selected
(``runtime/compiler.py``), it does nothing.
"""
from __future__ import annotations

import importlib
import sys

REGISTRY = "numba.cuda.np.arrayobj"


def apply() -> bool:
    """Import numba-cuda's array registry with a stand-in ``np.row_stack`` where numpy lacks one;
    returns whether the stand-in was needed."""
    import numpy as np

    from .compiler import NAME, config

    if NAME != "numba-cuda" or config.ENABLE_CUDASIM or REGISTRY in sys.modules or hasattr(np, "row_stack"):
        return False

    def row_stack(tup):  # numpy < 2.5's alias of vstack; only numba-cuda's registration sees it
        return np.vstack(tup)

    np.row_stack = row_stack
    try:
        importlib.import_module(REGISTRY)
    finally:
        del np.row_stack
    return True
