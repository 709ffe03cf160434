"""``torch.nn.modules.dropout``."""
from ..dropout import (  # noqa: F401
    AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout, _DropoutNd,
)
