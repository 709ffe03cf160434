"""Compile every kernel variant of the PTX tests to PTX for cc 9.0 and report, variant by variant, which
compile and why the others fail.

The PTX tests stop at a family's first failure; this tool tries every variant, so it measures how far a
compiler gets. It uses the compiler that ``TINYNORM_CUDA_COMPILER`` selects
(``tinynorm/backends/cuda/runtime/compiler.py``); docs/cuda.md, "numba-cuda-mlir", has its findings::

    TINYNORM_CUDA_COMPILER=numba-cuda-mlir python tests/cuda/compile_every_kernel.py --out mlir.json

Needs NVVM (the compiler's CUDA wheels), not a GPU. Prints one line per failing variant and a summary by
reason; ``--out`` writes every variant's outcome as JSON. Exits 0 when every variant compiles.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import traceback
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE)]


def variants():
    """``(family, name, kernel, signature)`` of every variant the PTX tests compile, without repeats."""
    import numpy as np
    import test_cuda_ptx as norms
    import test_ptx_conv as conv
    import test_ptx_elementwise as elementwise
    import test_ptx_indexing as indexing
    import test_ptx_matmul as matmul
    import test_ptx_random_optim as random_optim
    import test_ptx_reductions as reductions
    from ptx_support import BOOL, F32, F64_TYPE, I64, array_type, tuple_type, types

    from tinynorm.kernels.cuda import cross_entropy as ce_kernels
    from tinynorm.kernels.cuda import indexing as index_kernels
    from tinynorm.kernels.cuda import pool
    from tinynorm.kernels.cuda import softmax as softmax_kernels

    families = {"norms": list(norms._cases()), "launch signatures": norms._launch_cases()}
    a4 = array_type(F32, 4)
    families["conv and pooling"] = conv._cases(F32) + conv._cases(F64_TYPE) + [
        ("max pool backward, int32 argmax", pool._max_pool_backward_kernel,
         (a4, array_type(types.int32, 4), a4, F32, array_type(I64, 1)))]
    integer_maps = ([elementwise._map_case(name, I64, [(I64, False), (I64, False)]) for name in ("add", "multiply")]
                    + [elementwise._map_case("logical_and", BOOL, [(BOOL, False), (BOOL, False)])])
    families["elementwise"] = (elementwise._cases(F32) + elementwise._float16_storage_cases()
                               + elementwise._cases(F64_TYPE) + integer_maps + elementwise._conversion_cases())
    index = array_type(I64, 1)
    families["indexing"] = [case for dtype in indexing.DTYPES for ndim in (1, 3) for case in indexing._cases(dtype, ndim)
                            if not (case[0] == "fill" and ndim != 1)] + [
        ("count", index_kernels._count_kernel, (array_type(BOOL, 1), index)),
        ("nonzero", index_kernels._nonzero_kernel, (array_type(BOOL, 1), index, tuple_type(2), array_type(I64, 2))),
        ("positions", index_kernels._positions_kernel,
         (array_type(I64, 2), tuple_type(2), tuple_type(2), index, index, indexing.FLAG, BOOL, BOOL)),
        ("iota", index_kernels._iota_kernel, (index,)),
        ("digit count", index_kernels._digit_count_kernel, (index, I64, index)),
        ("exclusive scan", index_kernels._exclusive_scan_kernel, (index,)),
        ("radix scatter", index_kernels._radix_scatter_kernel, (index,) * 2 + (I64,) + (index,) * 3),
        ("index count", index_kernels._index_count_kernel, (index, I64, I64, BOOL, index))]
    families["matmul"] = [(name, matmul._kernel(accumulator), signature)
                          for name, accumulator, signature, _ in matmul.CASES]
    families["random and optimizers"] = [case[:3] for case in random_optim._random_cases() + random_optim._optim_cases()]
    families["reductions"] = [case for dtype, (accumulator, result) in reductions.SUM_TYPES.items()
                              for case in reductions._sum_cases(dtype, accumulator, result,
                                                                mean=dtype in (types.float16, F32, F64_TYPE))
                              + reductions._extreme_cases(dtype)]
    softmax_cases = []
    for dtype, numba_type in ((np.float32, F32), (np.float64, F64_TYPE)):
        rows, values, target = array_type(numba_type, 2), array_type(numba_type, 1), array_type(I64, 1)
        dtype = np.dtype(dtype)
        softmax_cases += [
            (f"softmax forward [{dtype}]", softmax_kernels.forward_kernel(dtype), (rows, rows, BOOL, numba_type, I64)),
            (f"softmax backward [{dtype}]", softmax_kernels.backward_kernel(dtype),
             (rows, rows, rows, BOOL, numba_type, I64)),
            (f"cross-entropy forward [{dtype}]", ce_kernels.forward_kernel(dtype),
             (rows, target, I64, numba_type, numba_type, values, values)),
            (f"cross-entropy backward [{dtype}]", ce_kernels.backward_kernel(dtype),
             (values, rows, values, target, I64, numba_type, numba_type, numba_type, rows))]
    families["softmax and cross-entropy"] = softmax_cases  # as test_ptx_softmax.py
    seen = set()
    for family, cases in families.items():
        for name, kernel, signature in cases:
            if (kernel, signature) not in seen:
                seen.add((kernel, signature))
                yield family, name, kernel, signature


def reason(error: BaseException) -> tuple[str, str]:
    """The failure's kind (its exception and last message line) and where in tinynorm's source it arose."""
    text = "".join(traceback.format_exception(error))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    inner = [line for line in lines if re.match(r"^[\w.]*(Error|Exception)\b", line)]
    kind = inner[-1] if inner else lines[-1]
    where = re.findall(r'File "[^"]*?(tinynorm/kernels/cuda/[\w/]+\.py)", line (\d+)', text)
    return kind[:300], (f"{where[-1][0]}:{where[-1][1]}" if where else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write every variant's outcome as JSON here")
    options = parser.parse_args()
    from ptx_support import CC, current_device_stand_in

    from tinynorm.backends.cuda.runtime.compiler import NAME, cuda
    results = []
    with current_device_stand_in():
        for family, name, kernel, signature in variants():
            entry = {"family": family, "variant": name, "kernel": kernel.py_func.__qualname__,
                     "module": kernel.py_func.__module__, "ok": True}
            try:
                cuda.compile_ptx(kernel.py_func, signature, cc=CC)
            except Exception as error:  # noqa: BLE001  (every failure is the finding)
                entry["ok"] = False
                entry["error"], entry["where"] = reason(error)
                print(f"FAIL {family}: {name}: {entry['error']} ({entry['where']})", flush=True)
            results.append(entry)
    failed = [entry for entry in results if not entry["ok"]]
    print(f"\n{NAME}: {len(results) - len(failed)} of {len(results)} kernel variants compile for cc {CC}")
    for (error, where), count in Counter((e["error"], e["where"]) for e in failed).most_common():
        print(f"  {count:4d} x {error} at {where}")
    for family in dict.fromkeys(entry["family"] for entry in results):
        in_family = [entry for entry in results if entry["family"] == family]
        print(f"  {family}: {sum(e['ok'] for e in in_family)}/{len(in_family)}")
    if options.out:
        options.out.write_text(json.dumps({"compiler": NAME, "cc": CC, "variants": results}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
