"""PyTorch's ``torch.nn.modules`` import paths, as aliases of the classes in ``tinynorm.nn``.

Real code reaches layers through these paths, mostly in ``isinstance`` checks
(``isinstance(m, nn.modules.batchnorm._BatchNorm)`` to reset BatchNorm statistics,
``nn.modules.conv._ConvNd``, ``nn.modules.loss._Loss``); each submodule re-exports the same classes.
"""
from . import (  # noqa: F401
    activation, batchnorm, channelshuffle, container, conv, distance, dropout, flatten, fold, instancenorm, linear,
    loss, module, normalization, padding, pixelshuffle, pooling, sparse, transformer, upsampling,
)
from ..container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from ..module import Module  # noqa: F401
