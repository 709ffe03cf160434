"""The benchmarks behind ``tinynorm bench``, shipped with the package: they need nothing but tinynorm
(PyTorch, when installed, is the comparison; threadpoolctl, when installed, reports and limits BLAS).

- ``norms``: the normalization kernels against PyTorch, numpy and the copy bandwidth (``--device cuda``:
  the CUDA kernels on a GPU).
- ``engine``: the autograd engine's overhead (an MLP training step, a chain of small ops).
- ``conv``: convolutions alone, and small CNN / Transformer training steps.
- ``scale``: training steps as the models grow (CNN widths and image sizes, Transformer widths, depths
  and lengths), with a plot of step time against work per step.
- ``rnn``: LSTM and GRU layers, fused cell step against the composed one and PyTorch's.
- ``import-order``: one step mixing BLAS and parallel kernels, torch imported before and after tinynorm.

Each measures what a user gets by default: the libraries' own thread counts and OpenMP settings, and
PyTorch imported before tinynorm, as in a script that compares the two (``--threads``, ``--order`` to
change them); each prints those settings and writes them into its JSON.
"""
BENCHMARKS = {
    "norms": "tinynorm.benchmarks.norms",
    "engine": "tinynorm.benchmarks.engine",
    "conv": "tinynorm.benchmarks.conv",
    "scale": "tinynorm.benchmarks.scale",
    "rnn": "tinynorm.benchmarks.rnn",
    "import-order": "tinynorm.benchmarks.import_order",
}
