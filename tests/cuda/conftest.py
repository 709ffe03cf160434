"""The ``compile_ptx`` fixture of the PTX tests; the simulator tests (``sim_*.py``) run in a subprocess."""
import numba
import pytest
from ptx_support import CC, current_device_stand_in


@pytest.fixture(scope="session")
def compile_ptx():
    """``compile_ptx(kernel, signature) -> ptx`` for cc 9.0, with or without a GPU (a cc-9.0 device stands
    in for the compiler's lookups while these tests run: ``ptx_support.current_device_stand_in``).
    The tests fail, rather than skip, without NVVM, so a CI that forgot the cuda extra is noticed.
    """
    if numba.config.ENABLE_CUDASIM:
        pytest.skip("PTX compilation needs the real numba.cuda target, not the simulator")
    with current_device_stand_in():
        try:
            import tinynorm.backends.cuda  # noqa: F401  (first: its runtime makes numba-cuda work with numpy 2.5)
            from tinynorm.backends.cuda.runtime.compiler import cuda
            cuda.compile_ptx(lambda: None, (), cc=CC)
        except Exception as error:  # noqa: BLE001  (no numba-cuda, no NVVM, ...: the CI must install the extra)
            pytest.fail(f"compiling PTX needs numba-cuda with NVVM: install the cuda extra "
                        f"(pip install -e '.[cuda]'): {type(error).__name__}: {error}")
        compiled = {}

        def compile_(kernel, signature):
            if (kernel, signature) not in compiled:
                compiled[kernel, signature] = cuda.compile_ptx(kernel.py_func, signature, cc=CC)[0]
            return compiled[kernel, signature]

        yield compile_
