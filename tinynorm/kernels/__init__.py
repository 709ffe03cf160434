"""Numba kernels: plain functions on arrays, usable without the rest of tinynorm.

``tinynorm.kernels.cpu`` holds the ``@njit`` kernels for the CPU.
"""
