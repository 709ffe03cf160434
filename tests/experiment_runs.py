"""A quick experiment run for the tests: what ``run`` returns, the raw results its analysis saw, and
the record it wrote (checked to be compact and to redraw its own figure)."""
import json
from types import ModuleType

import pytest

RECORD_LIMIT = 100_000  # bytes: a record holds a run's numbers, not its logs


def quick_run_with_raw(experiment: ModuleType, out_dir, name: str):
    """(returned, raw results, saved record) of ``experiment.run(out_dir, quick=True)``."""
    seen = {}
    finish = experiment.finish

    def capture(results, target):
        seen["raw"] = results
        return finish(results, target)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(experiment, "finish", capture)
        returned = experiment.run(out_dir, quick=True, progress=False)
    record_file = out_dir / f"{name}.json"
    text = record_file.read_text()
    assert len(text.encode()) < RECORD_LIMIT and text.count("\n") == 1, "the record must be compact one-line JSON"
    saved = json.loads(text)
    assert saved["figures"] == [f"{name}.png"] and saved["checks"] == returned["checks"]
    redrawn = experiment.plot(saved, out_dir / "redrawn.png")  # the figure needs nothing but the record
    assert redrawn.read_bytes().startswith(b"\x89PNG")
    return returned, seen["raw"], saved
