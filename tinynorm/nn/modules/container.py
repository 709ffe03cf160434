"""``torch.nn.modules.container``."""
from ..container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
