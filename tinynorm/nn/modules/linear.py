"""``torch.nn.modules.linear``."""
from ..linear import Bilinear, Identity, Linear  # noqa: F401
from ..multihead_attention import NonDynamicallyQuantizableLinear  # noqa: F401
