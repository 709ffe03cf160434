"""``tinynorm.backends.cudnn``, as ``torch.backends.cudnn``: the switches training scripts set
(``cudnn.benchmark = True``, ``cudnn.deterministic = True``). tinynorm's CUDA kernels are its own, not
cuDNN's, so the switches have nothing to act on: they are kept so that such scripts run and can read
them back, and they change nothing."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: tinynorm does not use cuDNN."""
    return False


def version() -> None:
    """None: tinynorm does not use cuDNN (PyTorch gives None without it too)."""
    return None
