"""``torch.nn.modules.loss``."""
from ..loss import (  # noqa: F401
    BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss, _Loss,
    _WeightedLoss,
)
