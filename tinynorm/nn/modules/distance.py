"""``torch.nn.modules.distance``."""
from ..distance import CosineSimilarity, PairwiseDistance  # noqa: F401
