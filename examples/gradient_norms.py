"""Plot the gradient norm of each layer's FFN output weight W2 at initialization, for Pre-LN and Post-LN
Transformers of two depths (the measurement behind Xiong et al. 2020, Fig. 3).

Run:  python examples/gradient_norms.py [--out results/gradient_norms.png] [--norm layernorm]
Pre-LN's last-layer gradient shrinks as blocks are added (like 1/sqrt(L)); Post-LN's does not. Under a minute.
"""

import argparse
from pathlib import Path

import numpy as np

import tinynorm as tn
from tinynorm.data import CharTokenizer, load_text_corpus, sample_lm_batch
from tinynorm.experiments.common import new_figure, save_figure
from tinynorm.experiments.placement import per_example_gradient_norms, single_threaded
from tinynorm.models import TinyTransformerLM

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--out", default="results/gradient_norms.png", help="PNG file to write")
parser.add_argument("--norm", default="layernorm", choices=["layernorm", "rmsnorm"])
parser.add_argument("--depths", type=int, nargs="+", default=[4, 12], help="numbers of blocks")
args = parser.parse_args()

text = load_text_corpus()
tokenizer = CharTokenizer(text)
ids = tokenizer.encode(text)
x, y = sample_lm_batch(ids, 4, 32, rng=0)  # four windows: their single-window gradient norms are averaged

fig, axes = new_figure(size=(7.0, 4.5))
ax = axes[0][0]
with single_threaded():
    for placement, color in (("pre", "tab:blue"), ("post", "tab:red")):
        for depth, style in zip(args.depths, ("o--", "s-", "^-.", "v:")):
            tn.manual_seed(0)
            model = TinyTransformerLM(tokenizer.vocab_size, d_model=64, n_heads=4, n_layers=depth, block_size=32,
                                      norm=args.norm, placement=placement)
            norms = per_example_gradient_norms(model, x, y)["ffn_w2"]
            print(f"{placement}-LN, {depth:2d} blocks: W2 gradient norm per layer "
                  + " ".join(f"{v:.2f}" for v in norms))
            ax.plot(np.arange(1, depth + 1), norms, style, color=color, label=f"{placement}-LN, L={depth}")
ax.set_yscale("log")
ax.set_xlabel("layer (1 = input side)")
ax.set_ylabel("||grad W2||, mean over single windows")
ax.set_title(f"Gradient norm per layer at initialization ({args.norm})")
ax.legend()
print(f"plot: {save_figure(fig, Path(args.out))}")
