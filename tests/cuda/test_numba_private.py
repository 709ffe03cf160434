"""The two numba-cuda internals tinynorm's CUDA runtime reads, each in one function, fail loudly here
when numba-cuda changes them (no GPU needed).

* ``launch.driver_function`` reads a compiled kernel's ``CUfunction`` handle as
  ``compiled._codelibrary.get_cufunc()``: numba-cuda has no public accessor, and its own
  ``_Kernel.launch`` reads it the same way.
* ``memory._driver_flush`` empties the context's queue of deferred frees, ``Context.deallocations``
  (a ``_PendingDeallocs`` with ``clear()``): numba-cuda has no public call for it.

Everything else the runtime uses is public: ``dispatcher.compile``, the kernel's ``cooperative`` and
``debug`` flags, ``Context.memalloc``, ``cuda.from_cuda_array_interface`` and the dispatcher extension
interface (``prepare_args``).
"""
import inspect
from types import SimpleNamespace

import numba
import pytest

if numba.config.ENABLE_CUDASIM:
    pytest.skip("the simulator has neither compiled kernels nor a driver context", allow_module_level=True)

from numba.cuda import dispatcher  # noqa: E402
from numba.cuda.cudadrv import driver  # noqa: E402

from tinynorm.backends.cuda.runtime import launch, memory  # noqa: E402


def test_a_compiled_kernel_has_the_code_library_the_launch_path_reads(monkeypatch):
    """numba-cuda's own launch gets the ``CUfunction`` from ``self._codelibrary.get_cufunc()``, and a
    compiled kernel (built here without a GPU) has that library and method."""
    assert "self._codelibrary.get_cufunc()" in inspect.getsource(dispatcher._Kernel.launch)
    assert "compiled._codelibrary.get_cufunc()" in inspect.getsource(launch.driver_function)
    device = SimpleNamespace(compute_capability=(9, 0))
    monkeypatch.setattr(dispatcher, "get_current_device", lambda: device)
    from numba.cuda import codegen
    monkeypatch.setattr(codegen.devices, "get_context", lambda devnum=None: SimpleNamespace(device=device))

    def kernel(x):
        x[0] = 1.0

    compiled = dispatcher._Kernel(kernel, (numba.types.float32[::1],))
    assert callable(compiled._codelibrary.get_cufunc)
    assert compiled.cooperative is False and compiled.debug is False
    assert {"regs_per_thread", "max_threads_per_block"} <= set(dir(type(compiled)))  # read by the environment step


def test_the_context_keeps_its_deferred_frees_in_deallocations():
    """``memory._driver_flush`` calls ``Context.deallocations.clear()``: the attribute is set in the
    context's constructor and its class has ``clear``."""
    assert "self.deallocations = _PendingDeallocs(" in inspect.getsource(driver.Context.__init__)
    assert callable(driver._PendingDeallocs.clear)
    assert "deallocations.clear()" in inspect.getsource(memory._driver_flush)


def test_the_public_entry_points_the_runtime_uses_exist():
    from numba import cuda
    assert callable(dispatcher.CUDADispatcher.compile)
    assert callable(cuda.from_cuda_array_interface)
    assert callable(driver.Context.memalloc)
