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

# Prints whether tinynorm configured malloc and the page faults of a step's worth of arrays: eight of
# 4 MiB alive at once, then all freed, as a step's activations are; counted on the second such step
# (median of 9), once the same sizes have been allocated and freed before.
SCRIPT = """
import json, resource, statistics
import numpy as np
import tinynorm
def faults():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    arrays = [np.ones(1 << 20, np.float32) for _ in range(8)]
    del arrays
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
    assert report["faults"] < 256  # eight 4 MiB arrays are 8,192 pages: almost none faulted in again


def test_without_the_setting_a_steps_arrays_fault_in_again() -> None:
    report = run(GLIBC_TUNABLES="glibc.malloc.check=0")  # a glibc.malloc tunable: the user's choice
    assert not report["configured"]
    assert report["faults"] > 2048  # glibc's own thresholds return most of the pages on free


def test_users_own_malloc_settings_take_precedence() -> None:
    assert not run(MALLOC_TRIM_THRESHOLD_=str(128 << 10))["configured"]
    assert run(GLIBC_TUNABLES="glibc.rtld.optional_static_tls=512")["configured"]  # not a malloc tunable
