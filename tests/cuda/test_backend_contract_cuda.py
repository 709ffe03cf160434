"""The CUDA backend provides exactly :mod:`tinynorm.backends.contract`, one family per module.

Ops call ``xp.<name>`` on whichever backend holds their tensors, so a name the CUDA backend lacks fails
on ``device='cuda'`` at its first use, and a call that does not bind fails there too. Runs without a
GPU (importing the backend compiles nothing).
"""
import importlib

import numba
import pytest

if numba.config.ENABLE_CUDASIM:
    pytest.skip("the names are the same in the simulator; checked once, without it", allow_module_level=True)

import tinynorm.backends.cuda as cuda_backend
from tinynorm.backends import contract

from backend_contract import contract_problems, public_names


def test_cuda_all_lists_what_the_package_binds():
    bound = {name for name in vars(cuda_backend) if not name.startswith("_")}
    modules = {name for name in bound if isinstance(getattr(cuda_backend, name), type(cuda_backend))}
    assert set(cuda_backend.__all__) == bound - modules - {"CudaArray"}


def test_the_cuda_backend_provides_exactly_the_contract():
    assert contract_problems(cuda_backend) == []


@pytest.mark.parametrize("family", contract.FAMILIES, ids=lambda family: family.__name__)
def test_each_family_is_the_cuda_module_of_its_name(family):
    """``contract.Normalization`` is ``backends/cuda/normalization.py``: a reader finds the CUDA version of
    a name from the class it is declared in."""
    module = importlib.import_module(f"tinynorm.backends.cuda.{family.__name__.lower()}")
    assert public_names(module) == contract.names(family)
    assert f"CUDA: ``backends/cuda/{family.__name__.lower()}.py``" in family.__doc__
