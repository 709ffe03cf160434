"""Train SmallCNN on the 8x8 digits with each norm, at a small and a normal batch size.

BatchNorm normalizes with statistics of the batch; GroupNorm, LayerNorm and InstanceNorm normalize
each image on its own, so the batch size cannot reach them. How much BatchNorm suffers depends on how
many values each of its statistics pools: B x H x W per channel in the CNN (128 at batch 2 on 8x8 maps,
so it barely suffers here), only B per feature in an MLP (2 at batch 2: it breaks). The last two rows
show the MLP for contrast. Learning rate 0.1 * B / 32 and the same number of epochs at every batch size.

Run:  python examples/digits_norms.py [--epochs 3] [--batch-sizes 2 16]
The full study (digits and MNIST-1D, batch sizes 2-32, seeds, the published numbers, the BatchNorm analysis):
      tinynorm experiment batch-size --out results/batch_size
"""
import argparse
import time

import tinynorm as tn
from tinynorm.experiments.batch_size import (
    error_percent,
    load_data,
    make_model,
    scaled_lr,
    train,
)
from tinynorm.experiments.common import single_threaded

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=3, help="epochs at every batch size")
parser.add_argument("--batch-sizes", type=int, nargs=2, default=[2, 16], metavar=("SMALL", "NORMAL"))
args = parser.parse_args()

X_train, y_train, X_test, y_test = load_data()
cases = [("digits-cnn", norm) for norm in ("batchnorm", "groupnorm", "layernorm", "instancenorm", "none")]
cases += [("digits-mlp", "batchnorm"), ("digits-mlp", "layernorm")]
print(f"test error (%) after {args.epochs} epochs; {len(X_train)} training, {len(X_test)} test images")
print(f"{'model':>10} {'norm':>12} " + " ".join(f"{'B=' + str(b):>7}" for b in args.batch_sizes))
start = time.perf_counter()
with single_threaded():
    for kind, norm in cases:
        errors = []
        for batch in args.batch_sizes:
            tn.manual_seed(0)
            model = make_model(kind, norm)
            train(model, X_train, y_train, batch, scaled_lr(0.1, batch), args.epochs, seed=0)
            errors.append(error_percent(model.eval(), X_test, y_test))
        print(f"{kind:>10} {norm:>12} " + " ".join(f"{e:7.2f}" for e in errors), flush=True)
print(f"{time.perf_counter() - start:.0f} s")
