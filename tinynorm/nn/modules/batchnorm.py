"""``torch.nn.modules.batchnorm``: ``isinstance(m, _BatchNorm)`` matches every BatchNorm, SyncBatchNorm included."""
from ..normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm, _NormBase  # noqa: F401
from ..sync_batch_norm import SyncBatchNorm  # noqa: F401
