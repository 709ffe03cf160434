"""``torch.nn.modules.linear``."""
from ..linear import Identity, Linear  # noqa: F401
