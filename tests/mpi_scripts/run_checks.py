"""Run every multi-process check; started by tests/test_distributed.py as

    mpiexec -n W python -m mpi4py tests/mpi_scripts/run_checks.py 4,0,3    (one shard size per rank)

``-m mpi4py`` makes an exception on one rank abort them all instead of leaving the others waiting in
a collective. Rank 0 prints ``MPI_CHECKS_OK ...`` and every rank exits 0 when all checks pass;
otherwise rank 0 lists the failures and every rank exits 1.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the modules beside this script

import _harness as h  # noqa: E402
import ddp_checks  # noqa: E402
import sync_batch_norm_checks  # noqa: E402

sizes = h.shard_sizes()
sync_batch_norm_checks.run(sizes)
ddp_checks.run(sizes)
h.finish(f"MPI_CHECKS_OK world={h.world} shards={sizes}")
