"""Helpers for the scripts in this folder (the GPU benchmarks and tools): the timing, table and JSON
helpers of ``tinynorm.benchmarks.common``, which the benchmarks of ``tinynorm bench`` use too, plus two
for counting device work. Importing it puts this checkout's tinynorm first on the path, so the scripts
run from a plain checkout.

Nothing here changes a library's threading: each runs with its own defaults, as for a user, and the
JSON records them (``threading``).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tinynorm from this checkout

from tinynorm.benchmarks.common import (  # noqa: E402, F401
    CLOCKS, alternating_medians, copy_bandwidth, machine_info, median_time, print_table, write_json,
)


def replace_kernel_launches(replacement: Callable[..., None],
                            set_attribute: Callable[[Any, str, Any], None] = setattr) -> Callable[..., None]:
    """Make every loaded ``tinynorm.kernels.cuda`` module launch through ``replacement`` (same arguments
    as ``launch.launch``), to count launches; returns the original ``launch``. Import the kernel modules
    first: one imported later keeps the original. ``set_attribute`` makes the change (a test passes
    ``monkeypatch.setattr`` to have it undone)."""
    from tinynorm.backends.cuda.runtime import launch

    original = launch.launch
    for module in list(sys.modules.values()):
        in_package = getattr(module, "__name__", "").startswith("tinynorm.kernels.cuda")
        if in_package and getattr(module, "launch", None) is original:
            set_attribute(module, "launch", replacement)
    return original


def training_step(model: Any, optimizer: Any, inputs: Any, targets: Any) -> None:
    """One tinynorm training step: zero_grad, forward, cross-entropy over the last dim, backward, step."""
    import tinynorm.nn.functional as F

    optimizer.zero_grad()
    logits = model(inputs)
    F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)).backward()
    optimizer.step()
