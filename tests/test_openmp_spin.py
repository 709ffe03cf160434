"""tinynorm's short OpenMP spin reaches its own libgomp only (tinynorm/_openmp.py).

Each case runs in a fresh process with ``OMP_DISPLAY_ENV=VERBOSE``, under which every libgomp prints the
settings it read as it is loaded: first tinynorm's (loaded by ``import tinynorm``), then a copy of the
same library file loaded afterwards, as PyTorch's own libgomp would be. The copy is a separate runtime
that reads the environment afresh.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

PROBE = """
import ctypes, json, os, shutil, sys, tempfile
import tinynorm
from tinynorm import _openmp
mapped = {line.split()[-1] for line in open("/proc/self/maps") if "/libgomp" in line}
report = {"layer_load": _openmp.layer_load, "spin_count": _openmp.spin_count,
          "set_by_tinynorm": _openmp.spin_set_by_tinynorm, "environment": os.environ.get("GOMP_SPINCOUNT"),
          "libgomp": sorted(mapped)}
if len(mapped) == 1:
    copy = os.path.join(tempfile.mkdtemp(), "libgomp-later.so.1")
    shutil.copy(mapped.pop(), copy)
    print("LATER RUNTIME", file=sys.stderr, flush=True)
    ctypes.CDLL(copy)
print(json.dumps(report))
"""


def probe(**env: str) -> tuple[dict, list[str], list[str]]:
    """The probe's report, and the GOMP_SPINCOUNT values tinynorm's libgomp and the later one displayed."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY", "OMP_DISPLAY_ENV")}
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120,
                            env={**environment, "OMP_DISPLAY_ENV": "VERBOSE", **env})
    report = json.loads(result.stdout.strip().splitlines()[-1])
    if report["layer_load"] == "skipped" or len(report["libgomp"]) != 1:
        pytest.skip(f"tinynorm's parallel kernels do not run on one libgomp here ({report})")
    ours, _, later = result.stderr.partition("LATER RUNTIME")
    spin = re.compile(r"GOMP_SPINCOUNT = '(\d+)'")
    return report, spin.findall(ours), spin.findall(later)


def test_the_short_spin_is_read_by_tinynorms_runtime_and_leaves_the_environment() -> None:
    report, ours, later = probe()
    assert report["set_by_tinynorm"] and report["spin_count"] == "3000"
    assert report["environment"] is None  # child processes and later runtimes do not inherit it
    assert ours == ["3000"]
    assert later and later != ["3000"], later  # libgomp's own default (300000)


def test_a_spin_chosen_by_the_user_reaches_every_runtime() -> None:
    report, ours, later = probe(GOMP_SPINCOUNT="12345")
    assert not report["set_by_tinynorm"] and report["spin_count"] == "12345"
    assert report["environment"] == "12345"
    assert ours == ["12345"] and later == ["12345"]
