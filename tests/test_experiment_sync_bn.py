"""The SyncBatchNorm experiment: its quick run on 2 MPI processes, and the single-process pieces."""
import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("mpi4py")

from tinynorm import nn
from tinynorm.experiments import sync_bn as exp

from experiment_runs import quick_run_with_raw


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("sync_bn")
    return (out_dir, *quick_run_with_raw(exp, out_dir, "sync_bn"))


@pytest.mark.mpi
def test_two_processes_with_sync_batch_norm_train_as_one_process_on_the_global_batch(quick_run):
    out_dir, results, raw, saved = quick_run
    assert (out_dir / "sync_bn.png").read_bytes().startswith(b"\x89PNG")
    assert {c["id"] for c in results["checks"]} <= exp.RESOLVED_IN_QUICK
    st = exp.QUICK
    assert len(saved["distributed"]) == len(st.norms) * len(st.per_process_batches) * len(st.seeds)
    for run in saved["distributed"]:
        assert run["world"] == 2 and run["global_batch"] == 2 * run["per_process"]
        assert run["steps"] == len(exp.global_batches(1347, run["global_batch"], st.epochs, run["seed"]))
    comparisons = raw["analysis"]["comparisons"]
    assert comparisons["syncbn"]["first_update"] <= exp.ROUNDING  # the same computation, up to float32 sums
    assert comparisons["syncbn"]["pairs"] == comparisons["reversed_batchnorm"]["pairs"] == 2
    assert len(saved["single_process"]) == 2 * len(st.per_process_batches)  # as drawn and rows reversed
    assert all("first_losses" not in r for r in saved["distributed"] + saved["single_process"])
    local = {r["per_process"]: r for r in raw["distributed"] if r["norm"] == "batchnorm"}
    reference = {r["global_batch"]: r for r in raw["single_process"] if not r["reverse_rows"]}
    # local BatchNorm over 2 samples is a different computation from BatchNorm over the global 4
    assert abs(local[2]["first_losses"][5] - reference[4]["first_losses"][5]) > 1e-3


def test_global_batches_are_disjoint_and_cover_each_epoch():
    steps = exp.global_batches(10, 4, 2, seed=0)
    assert len(steps) == 4 and all(len(s) == 4 for s in steps)
    for epoch in (steps[:2], steps[2:]):
        assert len(set(np.concatenate(epoch).tolist())) == 8
    assert [s.tolist() for s in steps] == [s.tolist() for s in exp.global_batches(10, 4, 2, seed=0)]


def test_models_and_the_one_value_per_channel_refusal():
    kinds = {norm: [type(m).__name__ for m in exp.make_model(norm).modules()] for norm in exp.NORMS}
    assert kinds["batchnorm"].count("BatchNorm1d") == 2 and kinds["syncbn"].count("SyncBatchNorm") == 2
    assert kinds["groupnorm"].count("GroupNorm") == 2
    data = exp.load_data()
    small = tuple(a[:40] for a in data[:2]) + data[2:]
    record = exp.train_and_test("batchnorm", 1, 0, 1, small)
    assert "more than 1 value per channel" in record["error"]
    trained = exp.train_and_test("groupnorm", 1, 0, 1, small)
    assert trained["steps"] == 40 and 0 <= trained["test_error"] <= 100


def test_reversed_rows_are_the_same_training_rounded_differently():
    data = exp.load_data()
    small = tuple(a[:64] for a in data[:2]) + data[2:]
    plain, flipped = (exp.train_and_test("batchnorm", 8, 0, 2, small, reverse_rows=r) for r in (False, True))
    assert plain["first_losses"][0] == pytest.approx(flipped["first_losses"][0], abs=1e-6)
    np.testing.assert_allclose(flipped["first_losses"], plain["first_losses"], atol=1e-4)
    assert plain["train_loss"] == pytest.approx(np.mean(plain["first_losses"][-8:]), rel=1e-6)  # the last epoch
    with pytest.raises(ValueError, match="norm must be one of"):
        exp.make_model("layernorm")
    assert isinstance(exp.make_model("groupnorm")[1], nn.GroupNorm)
