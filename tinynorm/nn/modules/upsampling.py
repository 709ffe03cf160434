"""``torch.nn.modules.upsampling``."""
from ..upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401
