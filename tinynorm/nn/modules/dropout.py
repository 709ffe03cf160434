"""``torch.nn.modules.dropout``."""
from ..dropout import Dropout, Dropout1d, Dropout2d, Dropout3d, _DropoutNd  # noqa: F401
