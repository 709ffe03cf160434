"""``torch.nn.modules.normalization``."""
from ..normalization import GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm  # noqa: F401
