"""The ``compile_ptx`` fixture of the PTX tests; the simulator tests (``sim_*.py``) run in a subprocess."""
from types import SimpleNamespace

import importlib

import numba
import pytest
from ptx_support import CC


@pytest.fixture(scope="session")
def compile_ptx():
    """``compile_ptx(kernel, signature) -> ptx`` for cc 9.0, with or without a GPU.

    numba-cuda compiles the device functions a kernel calls for the *current* device's compute
    capability (numba-cuda-mlir asks the driver for it even when given ``cc``). Without a GPU there is
    none, so the fixture stands in a cc-9.0 device for that lookup (and only while these tests run).
    The tests fail, rather than skip, without NVVM, so a CI that forgot the cuda extra is noticed.
    """
    if numba.config.ENABLE_CUDASIM:
        pytest.skip("PTX compilation needs the real numba.cuda target, not the simulator")
    patch = pytest.MonkeyPatch()
    try:
        import tinynorm.backends.cuda  # noqa: F401  (first: its runtime makes numba-cuda work with numpy 2.5)
        from tinynorm.backends.cuda.runtime import compiler
        cuda = compiler.cuda
        if compiler.NAME == "numba-cuda-mlir" and not cuda.is_available():
            patch.setattr(importlib.import_module("numba_cuda_mlir.tools"), "_cached_cc", CC)
        cuda.compile_ptx(lambda: None, (), cc=CC)
    except Exception as error:  # noqa: BLE001  (no numba-cuda, no NVVM, ...: the CI must install the extra)
        pytest.fail(f"compiling PTX needs numba-cuda with NVVM: install the cuda extra "
                    f"(pip install -e '.[cuda]'): {type(error).__name__}: {error}")
    dispatcher = importlib.import_module("numba_cuda_mlir.numba_cuda.dispatcher" if compiler.NAME == "numba-cuda-mlir"
                                         else "numba.cuda.dispatcher")
    if not cuda.is_available():
        patch.setattr(dispatcher, "get_current_device", lambda: SimpleNamespace(compute_capability=CC))

    compiled = {}

    def compile_(kernel, signature):
        if (kernel, signature) not in compiled:
            compiled[kernel, signature] = cuda.compile_ptx(kernel.py_func, signature, cc=CC)[0]
        return compiled[kernel, signature]

    yield compile_
    patch.undo()
