"""Whole training runs on the GPU: SmallCNN and TinyTransformerLM on ``device='cuda'``, timed against PyTorch.

1. ``SmallCNN`` (BatchNorm, width 16) on the 8x8 digits with the batch-size experiment's recipe at batch
   32: standardized pixels, SGD with momentum 0.9 at lr 0.1 and a per-step cosine decay, 8 epochs
   (336 steps). Reported: test accuracy in eval mode (the experiment's 3 seeds: 98.7 +- 0.4 %).
2. ``TinyTransformerLM`` (Pre-LN, LayerNorm, d_model 64, 4 layers, 4 heads) on the built-in text corpus
   with the RMSNorm-vs-LayerNorm experiment's recipe: windows of 32 characters, batch 16, Adam at
   lr 3e-3, 200 steps. Reported: the final loss, the mean training loss of the last tenth of the steps
   (the experiment on the CPU: 2.469).

PyTorch trains the same architectures (module names match, so the state dict loads strictly) from the
tinynorm model's initial weights, on the same batches in the same order, with the same optimizer and
schedule, on its CUDA device in strict float32 (TF32 off for matmuls and cuDNN, as tinynorm computes).
Each step (zero_grad, forward, loss, backward, optimizer and schedule step, on batches already on the
device) is timed alone, ending with a device synchronize; the table gives the median over the steps
(the first steps, which compile tinynorm's kernels, fall out of the median) and the ratio
tinynorm / PyTorch. The first-step losses of both must agree: they start from the same weights.

Run on a machine with an NVIDIA GPU, numba-cuda and (for the comparison) a CUDA build of PyTorch::

    python benchmarks/bench_training_cuda.py [--quick] [--out benchmarks/out/bench_training_cuda.json]

``--quick``: 1 epoch of the CNN and 50 LM steps. Without a usable GPU the script exits with status 1
and says why. ``--smoke`` trains 2 steps of each model at tiny sizes without PyTorch; it is the only
mode allowed in Numba's CUDA simulator, where it proves the script runs
(``NUMBA_ENABLE_CUDASIM=1 python benchmarks/bench_training_cuda.py --smoke --out /tmp/smoke.json``).
Without PyTorch (or without its CUDA device) the PyTorch columns stay empty.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tinynorm from this checkout

import numba

# common before tinynorm and torch: it fixes their OpenMP settings
from common import print_table, write_json
from torch_twins import torch_small_cnn, torch_transformer_lm

import tinynorm
from tinynorm.data import CharTokenizer, load_text_corpus, minibatches, sample_lm_batch
from tinynorm.experiments.batch_size import load_data as load_standardized_digits
from tinynorm.models import SmallCNN, TinyTransformerLM

EVAL_BATCH = 256


@dataclass(frozen=True)
class CnnConfig:
    """SmallCNN (BatchNorm) on the digits; ``train_samples``/``test_samples`` None: the whole split."""

    width: int
    batch_size: int
    epochs: int
    lr: float
    train_samples: int | None = None
    test_samples: int | None = None


@dataclass(frozen=True)
class LmConfig:
    """TinyTransformerLM (Pre-LN, LayerNorm) on the text corpus, ``steps`` random windows per run;
    ``corpus_chars`` keeps only the corpus's beginning (None: all of it; fewer characters, smaller vocabulary)."""

    d_model: int
    n_layers: int
    n_heads: int
    seq_len: int
    batch_size: int
    steps: int
    lr: float
    corpus_chars: int | None = None


CONFIGS = {  # full: the experiments' budgets (batch_size.py at batch 32, rms_vs_ln.py's full run)
    "full": (CnnConfig(width=16, batch_size=32, epochs=8, lr=0.1),
             LmConfig(d_model=64, n_layers=4, n_heads=4, seq_len=32, batch_size=16, steps=200, lr=3e-3)),
    "quick": (CnnConfig(width=16, batch_size=32, epochs=1, lr=0.1),
              LmConfig(d_model=64, n_layers=4, n_heads=4, seq_len=32, batch_size=16, steps=50, lr=3e-3)),
    "smoke": (CnnConfig(width=2, batch_size=2, epochs=1, lr=0.1, train_samples=4, test_samples=2),
              LmConfig(d_model=8, n_layers=1, n_heads=2, seq_len=4, batch_size=2, steps=2, lr=3e-3, corpus_chars=100)),
}
FIRST_LOSS_RTOL = 1e-3  # same weights, same batch: the first losses differ only by float32 rounding


# --------------------------------------------------------------------------- the two frameworks


@dataclass(frozen=True)
class Framework:
    """What the training loop needs from a library; tinynorm and PyTorch share the rest of their API
    (``zero_grad``/``backward``/``step``, ``optim.SGD``/``Adam``, ``lr_scheduler.CosineAnnealingLR``)."""

    name: str
    functional: Any  # provides cross_entropy
    optim: Any
    to_device: Callable[[np.ndarray], Any]
    to_numpy: Callable[[Any], np.ndarray]
    no_grad: Callable[[], Any]
    synchronize: Callable[[], None]


def tinynorm_framework() -> Framework:
    import tinynorm.nn.functional as F

    return Framework("tinynorm", F, tinynorm.optim, lambda a: tinynorm.tensor(a, device="cuda"),
                     lambda t: t.numpy(), tinynorm.no_grad, tinynorm.cuda.synchronize)


def torch_framework(torch: Any) -> Framework:
    return Framework("torch", torch.nn.functional, torch.optim, lambda a: torch.from_numpy(a).to("cuda"),
                     lambda t: t.cpu().numpy(), torch.no_grad, torch.cuda.synchronize)


def load_torch() -> Any | None:
    """PyTorch set to strict float32 on its CUDA device, or None (with the reason printed)."""
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: tinynorm rows only")
        return None
    if not torch.cuda.is_available():
        print(f"PyTorch {torch.__version__} sees no CUDA device: tinynorm rows only")
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


# --------------------------------------------------------------------------- data


Batches = list[tuple[np.ndarray, np.ndarray]]


def digit_batches(config: CnnConfig, seed: int) -> tuple[Batches, np.ndarray, np.ndarray]:
    """The training batches in order (a fresh shuffle each epoch, short last batch dropped as in the
    experiment: BatchNorm needs full batches) and the test images and labels."""
    X_train, y_train, X_test, y_test = load_standardized_digits()
    X_train, y_train = X_train[:config.train_samples], y_train[:config.train_samples]
    order = np.random.default_rng(seed)
    batches = [batch for _ in range(config.epochs)
               for batch in minibatches(X_train, y_train, batch_size=config.batch_size, rng=order, drop_last=True)]
    return batches, X_test[:config.test_samples], y_test[:config.test_samples]


def text_batches(config: LmConfig, seed: int) -> tuple[Batches, int]:
    """``config.steps`` random (input, next character) windows of the corpus, and the vocabulary size."""
    text = load_text_corpus(config.corpus_chars)
    tokenizer = CharTokenizer(text)
    ids = tokenizer.encode(text)
    rng = np.random.default_rng(seed)
    batches = [sample_lm_batch(ids, config.batch_size, config.seq_len, rng) for _ in range(config.steps)]
    return batches, tokenizer.vocab_size


# --------------------------------------------------------------------------- training and timing


def train(lib: Framework, model: Any, optimizer: Any, schedule: Any | None, batches: Batches) -> dict[str, Any]:
    """Train on ``batches`` (staged on the device first), each step timed alone up to a synchronize.

    The loss is cross-entropy over the last axis of the output (class logits or per-position logits).
    Returns the losses, the seconds of each step and their median, leaving out the first step (it
    compiles kernels) when there are more.
    """
    staged = [(lib.to_device(inputs), lib.to_device(targets)) for inputs, targets in batches]
    lib.synchronize()
    model.train()
    losses, seconds = [], []
    for inputs, targets in staged:
        start = time.perf_counter()
        optimizer.zero_grad()
        logits = model(inputs)
        loss = lib.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        optimizer.step()
        if schedule is not None:
            schedule.step()
        lib.synchronize()
        seconds.append(time.perf_counter() - start)
        losses.append(loss.detach())  # read back after the loop, not inside the timed steps
    timed = seconds[1:] or seconds
    return {"losses": [float(loss.item()) for loss in losses], "step_seconds": seconds,
            "median_step_ms": float(np.median(timed)) * 1e3, "total_seconds": float(np.sum(seconds))}


def accuracy_percent(lib: Framework, model: Any, images: np.ndarray, labels: np.ndarray) -> float:
    """Percentage of correctly classified test images, in eval mode (running statistics)."""
    model.eval()
    with lib.no_grad():
        predictions = np.concatenate([lib.to_numpy(model(lib.to_device(images[i:i + EVAL_BATCH])).argmax(1))
                                      for i in range(0, len(images), EVAL_BATCH)])
    return float(100.0 * np.mean(predictions == labels))


def final_loss(losses: list[float]) -> float:
    """Mean training loss over the last tenth of the steps (at least one), as rms_vs_ln.py reports it."""
    return float(np.mean(losses[-max(1, len(losses) // 10):]))


def contenders(model: Any, make_twin: Callable[[Any], Any], torch: Any | None) -> list[tuple[Framework, Any]]:
    """tinynorm's freshly built model moved to the GPU and, with PyTorch, its twin on PyTorch's GPU,
    given the same initial weights and buffers (loaded strictly: every name must match)."""
    state = {name: value.numpy() for name, value in model.state_dict().items()}
    pairs = [(tinynorm_framework(), model.to("cuda"))]
    if torch is not None:
        twin = make_twin(torch)
        twin.load_state_dict({name: torch.from_numpy(value.copy()) for name, value in state.items()}, strict=True)
        pairs.append((torch_framework(torch), twin.to("cuda")))
    return pairs


def show_progress(model: str, lib: Framework, record: dict[str, Any], metric: str) -> dict[str, Any]:
    """Print one finished run (a long run shows how far it got) and return its record."""
    print(f"{model} on {lib.name}: {len(record['losses'])} steps in {record['total_seconds']:.1f} s, median step "
          f"{record['median_step_ms']:.2f} ms, {metric} {record[metric]:.4g}", flush=True)
    return record


def run_cnn(config: CnnConfig, seed: int, torch: Any | None) -> dict[str, Any]:
    """Train the CNN with tinynorm on the GPU, then its PyTorch twin from the same start."""
    batches, X_test, y_test = digit_batches(config, seed)
    tinynorm.manual_seed(seed)
    model = SmallCNN(norm="batchnorm", width=config.width)
    results = {}
    for lib, net in contenders(model, lambda torch: torch_small_cnn(torch, width=config.width), torch):
        optimizer = lib.optim.SGD(net.parameters(), lr=config.lr, momentum=0.9)
        schedule = lib.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=len(batches))
        record = train(lib, net, optimizer, schedule, batches)
        record["test_accuracy"] = accuracy_percent(lib, net, X_test, y_test)
        results[lib.name] = show_progress("SmallCNN", lib, record, "test_accuracy")
    return results


def run_lm(config: LmConfig, seed: int, torch: Any | None) -> dict[str, Any]:
    """Train the language model with tinynorm on the GPU, then its PyTorch twin from the same start."""
    batches, vocab = text_batches(config, seed)
    tinynorm.manual_seed(seed)
    model = TinyTransformerLM(vocab, config.d_model, config.n_heads, config.n_layers, config.seq_len,
                              norm="layernorm", placement="pre")

    def twin(torch: Any) -> Any:
        return torch_transformer_lm(torch, vocab, config.d_model, config.n_heads, config.n_layers, config.seq_len)

    results = {}
    for lib, net in contenders(model, twin, torch):
        record = train(lib, net, lib.optim.Adam(net.parameters(), lr=config.lr), None, batches)
        record["final_loss"] = final_loss(record["losses"])
        results[lib.name] = show_progress("TinyTransformerLM", lib, record, "final_loss")
    return results


# --------------------------------------------------------------------------- report


def table_row(model: str, metric: str, results: dict[str, Any]) -> dict[str, Any]:
    """One table row: median step times, their ratio and the quality metric of each framework."""
    ours, theirs = results["tinynorm"], results.get("torch")
    row = {"model": model, "steps": len(ours["losses"]), "tinynorm_ms": ours["median_step_ms"],
           "metric": metric, "tinynorm": ours[metric]}
    if theirs is not None:
        row.update(torch_ms=theirs["median_step_ms"], ratio=ours["median_step_ms"] / theirs["median_step_ms"],
                   torch=theirs[metric])
    return row


def same_start(results: dict[str, Any]) -> bool | None:
    """Whether both frameworks' first losses agree (None without PyTorch): a check that the twin is the
    same model with the same weights."""
    if "torch" not in results:
        return None
    ours, theirs = results["tinynorm"]["losses"][0], results["torch"]["losses"][0]
    return bool(abs(ours - theirs) <= FIRST_LOSS_RTOL * abs(theirs))


def gpu_info() -> dict[str, Any]:
    """The GPU numba-cuda runs on (its name, compute capability) and numba-cuda's version."""
    from numba import cuda

    device = cuda.get_current_device()
    name = getattr(device, "name", "Numba CUDA simulator")  # the simulator's device has no name
    return {"gpu": name.decode() if isinstance(name, bytes) else str(name),
            "compute_capability": list(device.compute_capability), "simulator": bool(numba.config.ENABLE_CUDASIM),
            "numba_cuda": importlib.metadata.version("numba-cuda")}


def require_gpu(smoke: bool) -> None:
    """Exit with status 1 and the reason unless tinynorm can use a CUDA device for this mode."""
    if numba.config.ENABLE_CUDASIM and not smoke:
        sys.exit("bench_training_cuda: NUMBA_ENABLE_CUDASIM=1 is set, and simulated step times mean nothing; "
                 "only --smoke runs in the simulator")
    try:
        tinynorm.cuda.require()
    except RuntimeError as error:
        sys.exit(f"bench_training_cuda: no CUDA GPU to train on: {error}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/out/bench_training_cuda.json")
    parser.add_argument("--seed", type=int, default=0, help="seeds the initial weights and the batch order")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_true", help="1 CNN epoch and 50 LM steps")
    modes.add_argument("--smoke", action="store_true",
                       help="2 steps of each model at tiny sizes without PyTorch (also in the CUDA simulator)")
    args = parser.parse_args(argv)
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    require_gpu(args.smoke)
    torch = None if args.smoke else load_torch()
    cnn_config, lm_config = CONFIGS[mode]
    gpu = gpu_info()
    record = {"benchmark": "training_cuda", "mode": mode, "seed": args.seed, **gpu,
              "torch_cuda": torch.version.cuda if torch is not None else None,
              "torch_tf32": False if torch is not None else None,
              "configs": {"cnn": asdict(cnn_config), "lm": asdict(lm_config)},
              "rows": [], "checks": {}, "results": {}, "errors": {}}
    models = [("cnn", "SmallCNN digits", "test_accuracy", lambda: run_cnn(cnn_config, args.seed, torch)),
              ("lm", "TinyTransformerLM text", "final_loss", lambda: run_lm(lm_config, args.seed, torch))]
    for key, model, metric, train_model in models:  # one model failing does not lose the other
        try:
            results = train_model()
        except Exception as error:  # noqa: BLE001  (recorded, with its traceback)
            record["errors"][key] = f"{type(error).__name__}: {error}\n{traceback.format_exc()[-3000:]}"
            print(f"{model} failed: {record['errors'][key]}", flush=True)
            continue
        record["results"][key] = results
        record["rows"].append(table_row(model, metric, results))
        record["checks"][f"{key}_same_start"] = same_start(results)
        write_json(args.out, record)
    print(f"{mode} run on {gpu['gpu']}; step times are medians in ms, ratio = tinynorm / torch")
    print_table(record["rows"], ["model", "steps", "tinynorm_ms", "torch_ms", "ratio", "metric", "tinynorm", "torch"])
    for name, ok in record["checks"].items():
        if ok is False:
            print(f"warning: {name} failed: the first-step losses differ, so the PyTorch twin is not the same model")
    write_json(args.out, record)
    print(f"wrote {args.out}")
    if record["errors"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
