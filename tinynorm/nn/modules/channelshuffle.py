"""``torch.nn.modules.channelshuffle``."""
from ..upsampling import ChannelShuffle  # noqa: F401
