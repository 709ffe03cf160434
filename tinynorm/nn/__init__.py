"""Neural-network building blocks: ``Module``, layers, normalization, containers, init, functional."""
from . import functional, init
from .activation import (
    CELU, ELU, GELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish,
    PReLU, ReLU, ReLU6, RReLU, Sigmoid, SiLU, Softmax, Softmax2d, Softmin, Softplus, Softshrink, Softsign, Tanh,
    Tanhshrink, Threshold,
)
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
from .embedding import Embedding, EmbeddingBag
from .fold import Fold, Unfold
from .linear import Bilinear, Flatten, Identity, Linear, Unflatten
from .loss import (
    BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss, GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss,
    KLDivLoss, L1Loss, MarginRankingLoss, MSELoss, MultiLabelSoftMarginLoss, NLLLoss, PoissonNLLLoss, SmoothL1Loss,
    SoftMarginLoss, TripletMarginLoss, TripletMarginWithDistanceLoss,
)
from .module import Buffer, Module, Parameter
from .multihead_attention import MultiheadAttention
from .transformer import (
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
)
from .attention import MultiheadSelfAttention
from .blocks import ConvBlock, MLPBlock, TransformerBlock
from .conv import Conv1d, Conv2d
from .conv_transpose import ConvTranspose1d, ConvTranspose2d
from .pooling import (
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d,
    AvgPool1d, AvgPool2d, AvgPool3d, LPPool1d, LPPool2d, MaxPool1d, MaxPool2d, MaxPool3d,
)
from .residual import Residual
from .rnn import GRU, LSTM, RNN, RNNBase
from .rnn_cell import GRUCell, LSTMCell, RNNCell, RNNCellBase
from .layer_norm_lstm import LayerNormLSTM, LayerNormLSTMCell
from .sync_batch_norm import SyncBatchNorm
from .normalization import (
    BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LayerNorm,
    LocalResponseNorm, RMSNorm,
)
from .padding import (
    CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d, ReflectionPad1d,
    ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, ZeroPad1d, ZeroPad2d,
    ZeroPad3d,
)
from .upsampling import (
    ChannelShuffle, PixelShuffle, PixelUnshuffle, Upsample, UpsamplingBilinear2d, UpsamplingNearest2d,
)
from . import parameter, utils
from .utils import freeze_batch_norm, recompute_batch_norm_statistics, unfreeze_batch_norm
from . import modules  # noqa: E402  (PyTorch's nn.modules.* paths, over the classes above)

__all__ = [
    "functional", "init", "modules", "parameter", "utils",
    "Module", "Parameter", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "Linear", "Identity", "Flatten", "Unflatten", "Embedding", "Conv1d", "Conv2d",
    "CELU", "ELU", "GELU", "GLU", "SELU", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU", "LogSigmoid",
    "LogSoftmax", "Mish", "PReLU", "ReLU", "ReLU6", "Sigmoid", "SiLU", "Softmax", "Softmin", "Softplus", "Softsign",
    "Tanh", "Tanhshrink", "Threshold", "Hardshrink", "Softshrink", "Softmax2d",
    "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "PixelShuffle", "PixelUnshuffle",
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "Bilinear", "Buffer",
    "Fold", "Unfold", "EmbeddingBag", "ConvTranspose1d", "ConvTranspose2d", "RReLU", "LPPool1d", "LPPool2d",
    "LocalResponseNorm", "ChannelShuffle",
    "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss", "L1Loss", "MSELoss", "NLLLoss",
    "SmoothL1Loss", "CosineEmbeddingLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "MarginRankingLoss",
    "MultiLabelSoftMarginLoss", "PoissonNLLLoss", "SoftMarginLoss", "TripletMarginLoss",
    "TripletMarginWithDistanceLoss",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d",
    "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "CosineSimilarity", "PairwiseDistance",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
    "LayerNorm",
    "RMSNorm", "SyncBatchNorm",
    "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell", "LayerNormLSTM", "LayerNormLSTMCell",
    "MultiheadAttention", "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
    "TransformerEncoderLayer",
    "MultiheadSelfAttention", "ConvBlock", "MLPBlock", "TransformerBlock", "Residual",
    "freeze_batch_norm", "recompute_batch_norm_statistics", "unfreeze_batch_norm",
]
