"""The CUDA backend offers every array function the CPU backend gives the ops, and lists them in ``__all__``.

Ops call ``xp.<name>`` on whichever backend holds their tensors, so a name only the CPU backend has
fails on ``device='cuda'`` at the first use. Runs without a GPU (importing the backend compiles nothing).
"""
import types

import numba
import pytest

if numba.config.ENABLE_CUDASIM:
    pytest.skip("the names are the same in the simulator; checked once, without it", allow_module_level=True)

import tinynorm.backends.cpu as cpu
import tinynorm.backends.cuda as cuda_backend

CPU_ONLY = {"indices_out_of_range"}  # a host-side check the ops call on get_backend("cpu") explicitly


def _public_values(module: types.ModuleType) -> dict:
    """The module's public names bound to functions, classes and constants: not modules, typing aids or
    the device-independent helpers of ``tinynorm.backends`` itself."""
    return {name: value for name, value in vars(module).items()
            if not name.startswith("_") and not isinstance(value, types.ModuleType)
            and getattr(value, "__module__", None) not in ("typing", "collections.abc", "__future__", "tinynorm.backends")
            and name != "annotations"}


def test_cuda_all_lists_what_the_package_binds():
    bound = set(_public_values(cuda_backend)) - {"CudaArray"}
    assert set(cuda_backend.__all__) == bound


def test_cuda_backend_has_every_cpu_backend_name():
    missing = set(_public_values(cpu)) - CPU_ONLY - set(cuda_backend.__all__)
    assert not missing, f"names the CPU backend gives the ops but the CUDA backend lacks: {sorted(missing)}"
