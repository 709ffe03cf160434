"""``torch.nn.modules.sparse``."""
from ..embedding import Embedding, EmbeddingBag  # noqa: F401
