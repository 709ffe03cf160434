"""``torch.nn.modules.conv``."""
from ..conv import Conv2d  # noqa: F401
from ..conv_transpose import ConvTranspose1d, ConvTranspose2d, _ConvTransposeNd  # noqa: F401
