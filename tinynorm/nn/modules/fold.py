"""``torch.nn.modules.fold``."""
from ..fold import Fold, Unfold  # noqa: F401
