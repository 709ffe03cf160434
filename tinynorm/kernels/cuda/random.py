"""Uniform random numbers on the GPU from Philox4x32-10, a counter-based generator.

A counter-based generator is a keyed hash: ``philox(counter, key)`` scrambles a 128-bit counter with a
64-bit key in ten rounds and returns four random 32-bit words. There is no state to carry from one
number to the next, so every thread computes its own numbers directly from their position, and
element ``i`` of a draw is the same whatever the grid, block size or GPU: results are reproducible
and independent of the launch shape. Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy
as 1, 2, 3", SC 2011) passes the BigCrush statistical tests, is what cuRAND and PyTorch's CUDA
generator use, and needs only 32x32-bit multiplies, XORs and adds. It is checked here against the
known-answer vectors of the authors' Random123 library (tests/cuda/sim_random_optim.py).

Layout of a draw of ``n`` values with key ``(key0, key1)``: counter ``c = (c_low, c_high, 0, 0)`` with
``c = c_high * 2**32 + c_low``; its four words give

* float32 (and float16): elements ``4c`` to ``4c + 3``, one word each;
* float64: elements ``2c`` and ``2c + 1``, two words each (53 random bits).

Values are ``k * 2**-bits`` for a random integer ``k`` with ``bits`` = 24 (float32), 11 (float16) or
53 (float64): every value is exact in its dtype and lies in ``[0, 1)``, never 1.

The 32-bit words are held in 64-bit unsigned integers, so the product of two words cannot overflow
and wrap-around additions are masked explicitly; every constant is a ``np.uint64`` (Numba turns
``uint64`` mixed with a plain ``int`` into float64).
"""
from __future__ import annotations

import numpy as np
from ...backends.cuda.runtime.compiler import cuda, float32, float64, uint32, uint64

from ...backends.cuda.runtime.launch import jit, launch
from .strided import THREADS, blocks_for

ROUNDS = 10
MULTIPLIER_0, MULTIPLIER_1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
KEY_BUMP_0, KEY_BUMP_1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)  # golden ratio, sqrt(3) - 1
LOW_32 = np.uint64(0xFFFFFFFF)
BITS_32 = np.uint64(32)
BITS_21 = np.uint64(21)
BITS_11 = np.uint64(11)
FLOAT64_UNIT = np.float64(2.0**-53)

# Random bits kept per value, by dtype; the 32-bit kernel keeps the top ``bits`` of each word.
RANDOM_BITS = {np.dtype(np.float16): 11, np.dtype(np.float32): 24, np.dtype(np.float64): 53}


@cuda.jit(device=True)
def low_word(value):
    """``value`` cut to 32 bits, as a ``uint64``: the multiplies below see an operand whose high half is
    known to be zero, so they need only the 32x32 -> 64-bit product (the PTX masks with 0xFFFFFFFF)."""
    return uint64(uint32(value))


@cuda.jit(device=True)
def philox4x32(c0, c1, c2, c3, key0, key1):
    """The four 32-bit words of Philox4x32-10 for counter ``(c0, c1, c2, c3)`` and key ``(key0, key1)``
    (all ``uint64`` holding 32-bit values)."""
    for _ in range(ROUNDS):
        product0 = MULTIPLIER_0 * low_word(c0)
        product1 = MULTIPLIER_1 * low_word(c2)
        c0, c1, c2, c3 = ((product1 >> BITS_32) ^ c1 ^ key0, product1 & LOW_32,
                          (product0 >> BITS_32) ^ c3 ^ key1, product0 & LOW_32)
        key0 = (key0 + KEY_BUMP_0) & LOW_32
        key1 = (key1 + KEY_BUMP_1) & LOW_32
    return c0, c1, c2, c3


@cuda.jit(device=True)
def counter_words(counter, key0, key1):
    """Philox's four words for the 64-bit ``counter`` (an element group's position)."""
    position = uint64(counter)
    return philox4x32(position & LOW_32, position >> BITS_32, uint64(0), uint64(0), key0, key1)


@jit
def _uniform_words_kernel(out, key0, key1, shift, unit):
    """One value per 32-bit word: ``out[4c + k] = (word_k >> shift) * unit`` (computed in float32,
    exact in ``out``'s dtype when ``shift`` keeps no more bits than it has)."""
    for counter in range(cuda.grid(1), (out.size + 3) // 4, cuda.gridsize(1)):
        words = counter_words(counter, key0, key1)
        for k in range(4):
            index = 4 * counter + k
            if index < out.size:
                out[index] = float32(words[k] >> shift) * unit


@jit
def _uniform_float64_kernel(out, key0, key1):
    """Two float64 values per counter, 53 bits each from a pair of words."""
    for counter in range(cuda.grid(1), (out.size + 1) // 2, cuda.gridsize(1)):
        words = counter_words(counter, key0, key1)
        for k in range(2):
            index = 2 * counter + k
            if index < out.size:
                bits = (words[2 * k] << BITS_21) | (words[2 * k + 1] >> BITS_11)
                out[index] = float64(bits) * FLOAT64_UNIT


def uniform_(out, key0: int, key1: int) -> None:
    """Fill the flat float16/float32/float64 device array ``out`` with uniform values in ``[0, 1)``,
    element ``i`` depending only on ``(key0, key1, i)`` (two 32-bit ints)."""
    dtype = np.dtype(out.dtype)
    if dtype not in RANDOM_BITS:
        raise TypeError(f"uniform_: out must have dtype float16, float32 or float64, got {dtype}")
    if out.ndim != 1:
        raise ValueError(f"uniform_: out must be a flat (1-D) device array, got shape {out.shape}")
    for name, key in (("key0", key0), ("key1", key1)):
        if not 0 <= int(key) <= 0xFFFFFFFF:
            raise ValueError(f"uniform_: {name} must be a 32-bit unsigned int, got {key}")
    if out.size == 0:
        return
    key0, key1 = np.uint64(key0), np.uint64(key1)
    if dtype == np.float64:
        launch(_uniform_float64_kernel, blocks_for(-(-out.size // 2)), THREADS, (out, key0, key1))
    else:
        bits = RANDOM_BITS[dtype]
        launch(_uniform_words_kernel, blocks_for(-(-out.size // 4)), THREADS,
               (out, key0, key1, np.uint64(32 - bits), np.float32(2.0**-bits)))
