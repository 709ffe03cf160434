"""Neural-network building blocks: ``Module``, layers, normalization, containers, init, functional."""
from . import functional, init
from .activation import GELU, Dropout, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .container import ModuleList, Sequential
from .embedding import Embedding
from .linear import Flatten, Identity, Linear
from .module import Module, Parameter

__all__ = [
    "functional", "init", "GELU", "Dropout", "LogSoftmax", "ReLU", "Sigmoid", "Softmax", "Tanh",
    "ModuleList", "Sequential", "Embedding", "Flatten", "Identity", "Linear", "Module", "Parameter",
]
