"""Every CUDA kernel in tinynorm/kernels/cuda is made by ``launch.jit`` and launched by ``launch.launch``
(``tinynorm/backends/cuda/runtime/launch.py``).

numba-cuda 0.30.4's dispatcher cannot launch a kernel given a ``None`` argument on a GPU
(``NotImplementedError`` in ``_prepare_args``); ``launch.jit`` adds the dispatcher extension that
passes it as a null pointer. The CUDA simulator hides the problem, so these checks look at the kernels
themselves: a kernel decorated with plain ``cuda.jit`` fails here, not on a user's GPU. Kernels built
by factories (``functools.cache``-d functions) are built for one representative argument each, so a
new factory must be listed in ``FACTORY_ARGUMENTS`` (or ``NOT_KERNEL_FACTORIES``).

A launch written ``kernel[grid, block](...)`` would work but skip the low-overhead path of
``launch.launch``; the last test finds any in the sources. Runs without a GPU and without the
simulator (whose ``cuda.jit`` takes no extensions).
"""
import ast
import importlib
import inspect
import pkgutil

import numba
import numpy as np
import pytest

if numba.config.ENABLE_CUDASIM:  # launch.jit adds no extension in the simulator: nothing to check there
    pytest.skip("the simulator's kernels take no dispatcher extensions", allow_module_level=True)

from numba import types
from numba.cuda.dispatcher import CUDADispatcher

import tinynorm.kernels.cuda as kernels_package
from tinynorm.kernels.cuda import elementwise
from tinynorm.backends.cuda.runtime.launch import NoneAsNullPointer

F32 = np.dtype(np.float32)
# A representative call of every kernel factory, by "module.function".
FACTORY_ARGUMENTS = {
    "_row_norm.narrow_forward": (4,),
    "_row_norm.narrow_backward": (4,),
    "conv._channel_sums_kernel": (types.float32,),
    "cross_entropy.forward_kernel": (F32,),
    "cross_entropy.backward_kernel": (F32,),
    "elementwise.map_kernel": (elementwise.add, 2, ((False, types.float32), (True, types.float32),
                                                    (True, types.boolean))),
    "elementwise.flat_map_kernel": (elementwise.add, 2, ((False, types.float32), (True, types.float32),
                                                         (True, types.boolean))),
    "elementwise.arange_kernel": (types.float32,),
    "matmul.gemm_kernel": (F32,),
    "reductions._sum_thread_kernel": (F32,),
    "reductions._sum_block_kernel": (F32, 256),
    "reductions._column_sum_kernel": (F32,),
    "reductions._extreme_thread_kernel": (True, F32),
    "reductions._extreme_block_kernel": (True, F32, 256),
    "scan.scan_kernel": (F32, False),
    "softmax.forward_kernel": (F32,),
    "softmax.backward_kernel": (F32,),
}
# Cached functions that build device functions or compute values, not kernels.
NOT_KERNEL_FACTORIES = {"_shared.sm_count", "matmul.accumulator_dtype",
                        "strided._unread_flag", "elementwise._with_three_arguments", "elementwise._loader",
                        "elementwise._flat_loader",
                        "reductions._extreme_functions", "elementwise.gelu_functions", "math.float_functions"}


def _modules():
    """Every module of tinynorm.kernels.cuda, imported, by its short name."""
    return {info.name: importlib.import_module(f"{kernels_package.__name__}.{info.name}")
            for info in pkgutil.iter_modules(kernels_package.__path__)}


def _own(module, value) -> bool:
    """Whether ``value`` was defined in ``module`` (not imported into it)."""
    function = getattr(value, "py_func", value)
    return getattr(function, "__module__", None) == module.__name__


def _is_kernel(value) -> bool:
    return isinstance(value, CUDADispatcher) and not value.targetoptions.get("device")


def _kernels():
    """``(name, kernel)`` for every kernel of the package: module-level ones and factory-built ones."""
    found = []
    for module_name, module in _modules().items():
        for name, value in vars(module).items():
            if not _own(module, value):
                continue
            qualified = f"{module_name}.{name}"
            if _is_kernel(value):
                found.append((qualified, value))
            elif callable(value) and hasattr(value, "cache_info") and qualified not in NOT_KERNEL_FACTORIES:
                assert qualified in FACTORY_ARGUMENTS, (
                    f"{qualified} is a cached factory: list a representative call in FACTORY_ARGUMENTS "
                    f"(or the name in NOT_KERNEL_FACTORIES if it builds no kernel)")
                built = value(*FACTORY_ARGUMENTS[qualified])
                assert _is_kernel(built), f"{qualified}{FACTORY_ARGUMENTS[qualified]} built {built!r}, not a kernel"
                found.append((f"{qualified}(...)", built))
    return found


def test_every_kernel_takes_none_arguments():
    """Each kernel carries the NoneAsNullPointer extension of ``launch.jit`` (and caches its compilation)."""
    found = _kernels()
    assert len(found) >= 40, [name for name, _ in found]  # the search itself works: ~45 kernels today
    missing = [name for name, kernel in found
               if not any(isinstance(e, NoneAsNullPointer) for e in kernel.targetoptions.get("extensions", ()))]
    assert not missing, f"kernels made with cuda.jit instead of launch.jit: {missing}"
    uncached = [name for name, kernel in found if type(kernel._cache).__name__ == "NullCache"]
    assert not uncached, f"kernels compiled without cache=True: {uncached}"


def test_every_listed_factory_exists():
    """The lists above name only functions that exist (a renamed factory must be renamed here too)."""
    modules = _modules()
    for qualified in [*FACTORY_ARGUMENTS, *NOT_KERNEL_FACTORIES]:
        module_name, name = qualified.split(".")
        assert hasattr(modules[module_name].__dict__.get(name), "cache_info"), qualified


def _subscript_calls(source: str) -> list[int]:
    """Line numbers of calls of the form ``x[...](...)``: a kernel launched through the dispatcher."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)]


def test_every_launch_goes_through_launch_launch():
    """No kernel module launches a kernel with ``kernel[grid, block](...)`` itself."""
    offenders = []
    for module_name, module in _modules().items():
        offenders += [f"{module_name}.py:{line}" for line in _subscript_calls(inspect.getsource(module))]
    assert not offenders, f"launch these kernels with launch.launch(kernel, grid, block, args): {offenders}"
    assert _subscript_calls("kernel[4, 32](x)\ny = x[0]\nz = x[0].copy()\n") == [1]  # the search works
