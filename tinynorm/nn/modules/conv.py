"""``torch.nn.modules.conv``."""
from ..conv import Conv2d  # noqa: F401
