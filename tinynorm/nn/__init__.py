"""Neural-network building blocks: ``Module``, layers, normalization, containers, init, functional."""
from . import functional, init
from .activation import GELU, Dropout, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .container import ModuleList, Sequential
from .embedding import Embedding
from .linear import Flatten, Identity, Linear
from .module import Module, Parameter
from .attention import MultiheadSelfAttention
from .blocks import ConvBlock, MLPBlock, TransformerBlock
from .conv import AdaptiveAvgPool2d, AvgPool2d, Conv1d, Conv2d, MaxPool2d
from .residual import Residual
from .rnn import GRU, LSTM, RNN, RNNBase
from .rnn_cell import GRUCell, LSTMCell, RNNCell, RNNCellBase
from .layer_norm_lstm import LayerNormLSTM, LayerNormLSTMCell
from .sync_batch_norm import SyncBatchNorm
from .normalization import (
    BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, InstanceNorm1d, InstanceNorm2d, LayerNorm, RMSNorm,
)
from . import utils
from .utils import freeze_batch_norm, recompute_batch_norm_statistics, unfreeze_batch_norm

__all__ = [
    "functional", "init", "GELU", "Dropout", "LogSoftmax", "ReLU", "Sigmoid", "Softmax", "Tanh",
    "ModuleList", "Sequential", "Embedding", "Flatten", "Identity", "Linear", "Module", "Parameter",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "LayerNorm",
    "RMSNorm", "utils", "MultiheadSelfAttention", "ConvBlock", "MLPBlock", "TransformerBlock",
    "AdaptiveAvgPool2d", "AvgPool2d", "Conv1d", "Conv2d", "MaxPool2d", "Residual",
    "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell", "LayerNormLSTM", "LayerNormLSTMCell", "SyncBatchNorm", "freeze_batch_norm", "recompute_batch_norm_statistics", "unfreeze_batch_norm",
]
