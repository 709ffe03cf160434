"""``torch.nn.modules.module``."""
from ..module import Module  # noqa: F401
from ..module import indent as _addindent  # noqa: F401
