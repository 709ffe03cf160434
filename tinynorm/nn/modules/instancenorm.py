"""``torch.nn.modules.instancenorm``."""
from ..normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm  # noqa: F401
