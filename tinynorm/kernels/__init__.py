"""Numba kernels: plain functions on arrays, usable without the rest of tinynorm.

``tinynorm.kernels.cpu`` holds the ``@njit`` kernels for the CPU; ``tinynorm.kernels.cuda`` the
normalization kernels as ``@cuda.jit`` kernels (import it explicitly: it loads numba.cuda, which
``import tinynorm`` never does).
"""
