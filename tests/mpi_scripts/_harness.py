"""What the MPI check scripts share: the shard layout from the command line and the verdict.

The checks run under ``mpiexec -n W python -m mpi4py run_checks.py 4,0,3`` (one shard size per rank;
``-m mpi4py`` aborts every rank when one raises, so a failure can never leave the others waiting).
Rank 0 gathers the ranks' results, compares them with a single-process reference and records each
mismatch; :func:`finish` shares the verdict so that every rank exits 0 or 1 together.
"""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, world = comm.Get_rank(), comm.Get_size()
failures: list[str] = []


def shard_sizes() -> list[int]:
    sizes = [int(s) for s in sys.argv[1].split(",")]
    if len(sizes) != world:
        raise SystemExit(f"{len(sizes)} shard sizes given for {world} processes")
    return sizes


def local_slice(sizes: list[int]) -> slice:
    start = sum(sizes[:rank])
    return slice(start, start + sizes[rank])


def gather_rows(array: np.ndarray) -> np.ndarray | None:
    """Every rank's rows, concatenated in rank order, on rank 0 (None elsewhere)."""
    parts = comm.gather(np.asarray(array), root=0)
    return np.concatenate(parts) if rank == 0 else None


def check(name: str, got, want, rtol: float, atol: float) -> None:
    """On rank 0: record a failure unless ``got`` matches ``want``."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        failures.append(f"{name}: shape {got.shape} != {want.shape}")
    elif not np.allclose(got, want, rtol=rtol, atol=atol):
        failures.append(f"{name}: max abs error {np.abs(got - want).max():.3g}")


def expect(name: str, condition: bool) -> None:
    if not condition:
        failures.append(name)


def finish(success_line: str) -> None:
    verdict = comm.bcast(failures if rank == 0 else None, root=0)
    if verdict:
        if rank == 0:
            print("FAILED:\n  " + "\n  ".join(verdict), flush=True)
        sys.exit(1)
    if rank == 0:
        print(success_line, flush=True)
