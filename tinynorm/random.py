"""Random number generators: ``tinynorm.Generator`` and the global one behind ``tinynorm.manual_seed``.

Every random function (``rand``, ``randn``, ``randint``, ``randperm``, ``normal``, ``bernoulli``,
``multinomial``, dropout masks, parameter init, ``DataLoader`` shuffling) draws from the global
generator unless it is given its own with ``generator=``, as in PyTorch::

    g = tinynorm.Generator().manual_seed(0)
    x = tinynorm.randn(3, generator=g)          # the same numbers on every run

``tinynorm.manual_seed(0)`` makes a whole run reproducible. The numbers themselves differ from
PyTorch's: a ``Generator`` draws from numpy's PCG64 generator (``numpy.random.default_rng(seed)`` gives
the same stream), not from PyTorch's Mersenne Twister, so its ``get_state()`` is PCG64's 48 bytes.
"""
from __future__ import annotations

import secrets
from typing import Any

import numpy as np

from .backends import canonical_device
from .devices import default_device_name
from .tensor import Tensor, tensor

DEFAULT_SEED = 0
_STATE_BYTES = 48  # PCG64: 128-bit state, 128-bit increment, the buffered 32-bit half and its flag (8 each)


class Generator:
    """A random number generator with its own seed and state, passed as ``generator=`` to random functions.

    ``device`` is the device of the tensors it fills (``'cpu'`` or ``'cuda'``); the numbers are drawn
    on the host in both cases (on the GPU, dropout keys its kernel from them), so a seed gives the
    same values on both devices.
    """

    def __init__(self, device: Any = "cpu") -> None:
        self.device = canonical_device(device)
        self._numpy = np.random.Generator(np.random.PCG64(DEFAULT_SEED))
        self._initial_seed = DEFAULT_SEED

    def manual_seed(self, seed: int) -> "Generator":
        """Restart the generator from ``seed`` (an int in ``[-2**63, 2**64)``; negative seeds wrap
        modulo 2**64, as PyTorch's do); returns the generator, so ``Generator().manual_seed(0)`` works."""
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, (bool, np.bool_)):
            raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__}")
        if not -2**63 <= seed < 2**64:
            raise ValueError(f"manual_seed: seed must be in [-2**63, 2**64), got {seed}")
        self._initial_seed = int(seed) % 2**64
        self._numpy.bit_generator.state = np.random.PCG64(self._initial_seed).state
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy source (non-deterministic); returns the seed."""
        seed = secrets.randbits(63)
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        """The seed the generator was last started from."""
        return self._initial_seed

    def get_state(self) -> Any:
        """The generator's state as a uint8 tensor, for :meth:`set_state`."""
        state = self._numpy.bit_generator.state
        words = (state["state"]["state"], state["state"]["inc"], state["has_uint32"], state["uinteger"])
        sizes = (16, 16, 8, 8)
        raw = b"".join(int(word).to_bytes(size, "little") for word, size in zip(words, sizes))
        return tensor(np.frombuffer(raw, dtype=np.uint8))

    def set_state(self, new_state: Any) -> "Generator":
        """Restore a state returned by :meth:`get_state`; returns the generator."""
        raw = _state_bytes(new_state)
        state = self._numpy.bit_generator.state
        state["state"] = {"state": int.from_bytes(raw[:16], "little"), "inc": int.from_bytes(raw[16:32], "little")}
        state["has_uint32"] = int.from_bytes(raw[32:40], "little")
        state["uinteger"] = int.from_bytes(raw[40:48], "little")
        if state["has_uint32"] not in (0, 1) or state["uinteger"] >= 2**32 or not state["state"]["inc"] & 1:
            raise ValueError("set_state: new_state is not a state returned by Generator.get_state()")
        self._numpy.bit_generator.state = state
        return self

    def __repr__(self) -> str:
        return f"tinynorm.Generator(device='{self.device}', initial_seed={self._initial_seed})"


def _state_bytes(new_state: Any) -> bytes:
    """The 48 bytes of a state tensor, with PyTorch's errors for anything else."""
    if not isinstance(new_state, Tensor) or new_state.dtype != np.uint8:
        kind = f"a tensor of dtype {new_state.dtype}" if isinstance(new_state, Tensor) else type(new_state).__name__
        raise TypeError(f"set_state: the RNG state must be a uint8 tensor from get_state(), got {kind}")
    if new_state.numel() != _STATE_BYTES:
        raise RuntimeError(f"set_state: expected a state of {_STATE_BYTES} bytes, got {new_state.numel()}")
    return new_state.numpy().tobytes()


_default = Generator()


def default_generator() -> np.random.Generator:
    """The numpy generator that the global :class:`Generator` draws with (seeded by :func:`manual_seed`)."""
    return _default._numpy


def numpy_generator(generator: Generator | np.random.Generator | None, device: Any = "cpu",
                    op: str = "random") -> np.random.Generator:
    """The numpy generator that ``op`` draws from: ``generator``'s own, or the global one when None.

    A numpy ``Generator`` is accepted as is. A :class:`Generator` made for another device is an error,
    as in PyTorch (``Generator('cuda')`` fills CUDA tensors).
    """
    if generator is None:
        return _default._numpy
    if isinstance(generator, np.random.Generator):
        return generator
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}: generator must be a tinynorm.Generator, got {type(generator).__name__}")
    device = canonical_device(default_device_name() if device is None else device)
    if generator.device != device:
        raise RuntimeError(f"{op}: expected a '{device}' device type for generator but found '{generator.device}'")
    return generator._numpy


def manual_seed(seed: int) -> Generator:
    """Reseed the global generator (CPU and CUDA draws alike); returns it."""
    return _default.manual_seed(seed)


def seed() -> int:
    """Seed the global generator non-deterministically; returns the seed."""
    return _default.seed()


def initial_seed() -> int:
    """The seed the global generator was last started from (0 until :func:`manual_seed` is called)."""
    return _default.initial_seed()


def get_rng_state() -> Any:
    """The global generator's state as a uint8 tensor."""
    return _default.get_state()


def set_rng_state(new_state: Any) -> None:
    """Restore the global generator's state from :func:`get_rng_state`."""
    _default.set_state(new_state)
