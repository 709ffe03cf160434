"""``tinynorm.backends.mps``, as ``torch.backends.mps``: Apple's Metal device, which tinynorm does not
drive. Scripts that choose their device by asking (``"mps" if torch.backends.mps.is_available() else
...``) take another branch."""


def is_available() -> bool:
    """False: tinynorm has no Metal backend."""
    return False


def is_built() -> bool:
    """False: tinynorm has no Metal backend."""
    return False
