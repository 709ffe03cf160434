"""``F.gumbel_softmax``: a differentiable sample from the categorical distribution softmax(logits)
(Jang et al. 2017; Maddison et al. 2017). softmax((logits + g) / tau) with Gumbel noise
g = -log(E), E ~ Exponential(1); as tau -> 0 it approaches a one-hot sample whose argmax is distributed
as softmax(logits) (the Gumbel-max trick). ``hard=True`` returns that one-hot vector in the forward
pass with the soft sample's gradient (straight-through)."""
from __future__ import annotations

import warnings

import numpy as np

from ..random import default_generator
from ..tensor import Tensor
from .dims import normalize_dim
from .softmax import softmax


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    d = normalize_dim(dim, logits.ndim, "gumbel_softmax")
    xp = logits._backend
    uniform = Tensor._from_array(xp.random_uniform(default_generator(), tuple(logits.shape), logits.dtype),
                                 logits.device)
    exponential = (-(1 - uniform).log()).clamp(min=float(np.finfo(logits.dtype).tiny))  # 0 only when u = 0
    soft = softmax((logits - exponential.log()) / tau, d)
    if not hard:
        return soft
    shape = [1] * logits.ndim
    shape[d] = logits.shape[d]
    classes = Tensor._from_array(xp.from_numpy(np.arange(logits.shape[d]).reshape(shape)), logits.device)
    one_hot = (classes == soft.detach().argmax(d, keepdim=True)).to(logits.dtype)
    return one_hot - soft.detach() + soft
