"""``torch.nn.modules.flatten``."""
from ..linear import Flatten, Unflatten  # noqa: F401
