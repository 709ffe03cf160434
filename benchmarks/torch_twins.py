"""The torch.nn twins of tinynorm's models live in the package (``tinynorm.benchmarks.twins``); this
name stays for the GPU scripts here that import it."""
from tinynorm.benchmarks.twins import torch_small_cnn, torch_transformer_lm  # noqa: F401
