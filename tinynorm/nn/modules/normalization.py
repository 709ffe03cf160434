"""``torch.nn.modules.normalization``."""
from ..normalization import GroupNorm, LayerNorm, RMSNorm  # noqa: F401
