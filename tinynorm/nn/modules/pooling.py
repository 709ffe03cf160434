"""``torch.nn.modules.pooling``."""
from ..pooling import (  # noqa: F401
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d,
    AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d, _AdaptiveAvgPoolNd, _AdaptiveMaxPoolNd,
    _AvgPoolNd, _MaxPoolNd, LPPool1d, LPPool2d, _LPPoolNd,
)
