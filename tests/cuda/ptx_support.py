"""Numba types and the float64 pattern shared by the PTX tests (``test_ptx_*.py``, ``test_cuda_ptx.py``).

Compiling a kernel to PTX needs NVVM (the cuda extra), not a GPU. The ``compile_ptx`` fixture is in
``conftest.py`` next to this file.
"""
import contextlib
import importlib
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

from pytest import MonkeyPatch

from tinynorm.backends.cuda.runtime.compiler import types  # the compiler TINYNORM_CUDA_COMPILER selects

CC = (9, 0)  # H100/H200
F16, F32, F64_TYPE = types.float16, types.float32, types.float64
I64, BOOL = types.int64, types.boolean
NONE = types.none


def array_type(dtype, ndim: int):
    """The Numba type of a C-contiguous device array."""
    return types.Array(dtype, ndim, "C")


def tuple_type(length: int):
    """The Numba type of a shape or strides tuple of ``length`` ints."""
    return types.UniTuple(I64, length)


P1, P2, P3 = (array_type(F32, ndim) for ndim in (1, 2, 3))

# An instruction that computes in, loads, stores or converts to/from float64, e.g. add.f64, fma.rn.f64,
# cvt.f64.f32, cvt.rn.f32.f64, ld.global.f64, setp.lt.f64 (a ".reg .f64" declaration is caught too).
F64 = re.compile(r"^\s*(?:@%p\d+\s+)?[a-z]+(?:\.[a-z0-9]+)*\.f64\b.*$|\.reg\s+\.f64", re.MULTILINE)


def ptxas() -> Path:
    """The ptxas of the CUDA toolkit wheels numba-cuda's cuda extra installs (``nvidia/cuda_nvcc`` for
    CUDA 12, ``nvidia/cu13`` for CUDA 13; found by cuda-pathfinder, a dependency of cuda-bindings): it
    reports the registers and spills of PTX assembled for sm_90, as the driver would."""
    from cuda.pathfinder import find_nvidia_binary_utility

    found = find_nvidia_binary_utility("ptxas")
    if found is None:
        raise FileNotFoundError("ptxas not found: install the cuda extra (pip install -e '.[cuda]')")
    return Path(found)


@contextlib.contextmanager
def current_device_stand_in():
    """Compile for cc 9.0 without a GPU, while the block runs.

    numba-cuda compiles the device functions a kernel calls for the *current* device's compute
    capability, and numba-cuda-mlir asks the driver for it even when ``compile_ptx`` is given ``cc``.
    Without a GPU there is none, so a cc-9.0 device stands in for those lookups; with a GPU nothing
    changes.
    """
    from tinynorm.backends.cuda.runtime import compiler

    patch = MonkeyPatch()
    try:
        if not compiler.cuda.is_available():
            if compiler.NAME == "numba-cuda-mlir":
                patch.setattr(importlib.import_module("numba_cuda_mlir.tools"), "_cached_cc", CC)
                dispatcher = importlib.import_module("numba_cuda_mlir.numba_cuda.dispatcher")
            else:
                dispatcher = importlib.import_module("numba.cuda.dispatcher")
            patch.setattr(dispatcher, "get_current_device", lambda: SimpleNamespace(compute_capability=CC))
        yield
    finally:
        patch.undo()


def assert_fits_in_registers(ptx: str, tmp_path: Path, max_registers: int, what: str, capped: bool = False,
                             max_spill_bytes: int = 0) -> None:
    """Assemble ``ptx`` for sm_90 with ptxas and require at most ``max_registers`` registers per thread
    and no spills (or at most ``max_spill_bytes`` of spill stores; ``what`` names the kernel in the failure
    message). ``capped``: assemble with ``-maxrregcount`` at that number, as the linker does for a kernel
    compiled with ``max_registers`` (ptxas then spills rather than exceed it)."""
    source = tmp_path / "kernel.ptx"
    source.write_text(ptx)
    cap = [f"-maxrregcount={max_registers}"] if capped else []
    report = subprocess.run([str(ptxas()), "-arch=sm_90", "-v", *cap, str(source), "-o", str(tmp_path / "kernel.cubin")],
                            capture_output=True, text=True, check=True).stderr
    where = f"{what}: {report}"
    spills = int(re.search(r"(\d+) bytes spill stores", report).group(1))
    assert spills <= max_spill_bytes, where
    if not max_spill_bytes:
        assert re.search(r"\b0 bytes stack frame", report), where
    assert int(re.search(r"Used (\d+) registers", report).group(1)) <= max_registers, where
