"""``torch.nn.modules.pixelshuffle``."""
from ..upsampling import PixelShuffle, PixelUnshuffle  # noqa: F401
