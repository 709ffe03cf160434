"""``torch.nn.modules.sparse``."""
from ..embedding import Embedding  # noqa: F401
