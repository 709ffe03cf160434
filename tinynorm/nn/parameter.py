"""``torch.nn.parameter``: ``Parameter`` and ``Buffer`` (defined with ``Module``)."""
from .module import Buffer, Parameter  # noqa: F401
