"""tinynorm keeps freed memory for reuse (tinynorm/_malloc.py): a large array allocated again after it
was freed reuses mapped pages instead of page-faulting its way in, unless the user chose glibc's
settings. Each case runs in a fresh process, since the settings are process-wide."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                                reason="the settings are glibc's")

# Prints whether tinynorm configured malloc and the page faults of filling a fresh 4 MiB array, once
# the same size has been allocated and freed before (median of 9).
SCRIPT = """
import json, resource, statistics
import numpy as np
import tinynorm
def faults():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    np.ones(1 << 20, np.float32)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
faults()
print(json.dumps({"configured": tinynorm._malloc.configured, "faults": statistics.median(faults() for _ in range(9))}))
"""


def run(**settings: str) -> dict:
    env = {name: value for name, value in os.environ.items()
           if name not in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")}
    result = subprocess.run([sys.executable, "-c", SCRIPT], env={**env, **settings}, capture_output=True,
                            text=True, check=True)
    return json.loads(result.stdout)


def test_freed_arrays_are_reused_without_page_faults() -> None:
    report = run()
    assert report["configured"]
    assert report["faults"] < 64  # a 4 MiB array is 1,024 pages: almost none of them faulted in again


def test_users_own_malloc_settings_take_precedence() -> None:
    report = run(MALLOC_MMAP_THRESHOLD_=str(128 << 10))  # glibc's initial threshold, fixed by the user
    assert not report["configured"]
    assert report["faults"] > 512  # every 4 MiB array comes fresh from mmap
