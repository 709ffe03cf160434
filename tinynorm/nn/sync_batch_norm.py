"""SyncBatchNorm: BatchNorm whose statistics are those of the global batch, split over MPI processes.

Under data parallelism each rank sees only its shard of the batch; plain BatchNorm would normalize
with the shard's statistics (noisy when the shard is a handful of samples). SyncBatchNorm gives every
rank the statistics of the whole batch with two small messages per layer and step:

* forward: each rank computes (count, mean, M2) per channel of its shard (M2 = sum of squared
  deviations); one ``Allgather`` shares them and every rank merges them with Chan et al.'s formula
  ``mean = sum(n_r mean_r) / n``, ``M2 = sum(M2_r) + sum(n_r (mean_r - mean)^2)``, which stays accurate
  when |mean| >> std. Ranks may hold different batch sizes, including zero.
* backward: the input gradient of BatchNorm needs two per-channel means over the whole batch,
  ``mean(dy)`` and ``mean(dy * xhat)``; each rank sums its shard (``batch_norm_backward_reduce``), one
  ``Allreduce`` adds the sums, and ``batch_norm_backward_elemt`` finishes ``dx`` locally.

``dweight``/``dbias`` are this rank's local sums, as in PyTorch: the gradient average of
DistributedDataParallel then makes them, like every other gradient, ``1 / world_size`` times the
gradient of the sum of the ranks' losses. The math is in docs/distributed.md.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import distributed
from ..autograd.function import Context
from .._checks import check_eps, check_momentum
from ..ops.normalization import (
    BatchNorm,
    as_3d,
    astype_if_needed,
    check_channel_params,
    check_norm_input,
    kernel_data,
    stat_dtype,
    update_running_stats,
)
from ..tensor import Tensor
from .module import Module
from .normalization import _BatchNorm


class SyncBatchNormFunction(BatchNorm):
    """BatchNorm in training mode whose statistics ``mean``/``rstd`` came from the global batch of
    ``count`` values per channel: backward sums the two gradient reductions over ``comm``."""

    @staticmethod
    def forward(ctx: Context, x: Any, weight: Any, bias: Any, mean: Any, rstd: Any, count: int, comm: Any) -> Any:
        ctx.count, ctx.comm = count, comm
        return BatchNorm.forward(ctx, x, weight, bias, mean, rstd, True)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        x3, mean, rstd, weight = ctx.saved_tensors
        xp = ctx.xp
        grad3 = astype_if_needed(grad.reshape(x3.shape), x3.dtype)  # float16 data is float32 for a CPU kernel
        sum_dy, sum_dy_xhat = xp.batch_norm_backward_reduce(grad3, x3, mean, rstd)
        # Both sums in one message, through host memory (MPI sends numpy arrays).
        sums = np.concatenate([xp.to_numpy(sum_dy), xp.to_numpy(sum_dy_xhat)]).astype(np.float64)
        MPI = distributed.mpi()
        ctx.comm.Allreduce(MPI.IN_PLACE, sums, op=MPI.SUM)
        global_means = xp.from_numpy((sums / ctx.count).astype(mean.dtype).reshape(2, -1))
        dx = xp.batch_norm_backward_elemt(grad3, x3, mean, rstd, weight, global_means[0], global_means[1])
        return dx.reshape(ctx.shape), sum_dy_xhat, sum_dy


def global_batch_stats(x: Tensor, comm: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """Per-channel mean and biased variance (float64, host arrays) of the batch formed by every rank's
    ``x`` (N_r, C, *), and its number of values per channel. One ``Allgather`` of ``2 C + 1`` numbers."""
    xp = x._backend
    x3 = kernel_data(xp, as_3d(x.array))
    channels, count = x3.shape[1], x3.shape[0] * x3.shape[2]
    local = np.zeros(2 * channels + 1)  # [count, mean (C), M2 (C)]; an empty shard sends zeros
    local[0] = count
    if count:
        mean, var = xp.batch_norm_stats(x3)
        local[1:channels + 1], local[channels + 1:] = xp.to_numpy(mean), xp.to_numpy(var).astype(np.float64) * count
    gathered = np.empty((comm.Get_size(), local.size))
    comm.Allgather(local, gathered)
    counts, means, m2s = gathered[:, :1], gathered[:, 1:channels + 1], gathered[:, channels + 1:]
    total = int(counts.sum())
    if total == 0:
        return np.zeros(channels), np.zeros(channels), 0
    mean = (counts * means).sum(axis=0) / total
    m2 = m2s.sum(axis=0) + (counts * (means - mean) ** 2).sum(axis=0)
    return mean, np.maximum(m2 / total, 0.0), total


def sync_batch_norm(x: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None,
                    bias: Tensor | None, momentum: float, eps: float, comm: Any) -> Tensor:
    """BatchNorm in training mode with the statistics of the global batch spread over ``comm``.

    Every rank must call it (an empty shard ``(0, C, *)`` too); running buffers, if given, are
    updated with the global unbiased variance, identically on every rank. The arguments are checked
    as :func:`tinynorm.ops.normalization.batch_norm` checks them.
    """
    op = "sync_batch_norm"
    x = check_norm_input(op, x, "(N, C, *)")
    running_mean, running_var, weight, bias = check_channel_params(op, x, running_mean, running_var, weight, bias)
    momentum, eps = check_momentum(momentum, op=op), check_eps(eps, op=op)
    mean, var, count = global_batch_stats(x, comm)
    if count <= 1:  # every rank sees the same count, so every rank raises: no rank is left waiting
        raise ValueError(
            f"{op}: Expected more than 1 value per channel when training, got {count} over {comm.Get_size()} "
            f"processes (this rank's input size {tuple(x.shape)})"
        )
    xp, dtype = x._backend, stat_dtype(x.dtype)
    if running_mean is not None and running_var is not None:
        update_running_stats(running_mean, running_var, xp.from_numpy(mean), xp.from_numpy(var), count, momentum)
    with np.errstate(divide="ignore"):  # var = eps = 0 gives inf, as on one process
        rstd = 1 / np.sqrt(var + eps)
    return SyncBatchNormFunction.apply(x, weight, bias, xp.from_numpy(mean.astype(dtype)),
                                       xp.from_numpy(rstd.astype(dtype)), count, comm)


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over (N, C) or (N, C, *) whose training statistics are those of the global batch
    split over the processes of ``process_group`` (an mpi4py communicator; None = the default of
    :mod:`tinynorm.distributed`). Evaluation mode, a frozen layer and a world of one process behave
    exactly as BatchNorm. Every rank must run every forward and backward, even with an empty shard.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group: Any = None, *, dtype: Any = None) -> None:
        distributed.mpi()  # fail now, with the install hint, rather than at the first training step
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype=dtype)
        self.process_group = process_group

    def _check_input_dims(self, x: Tensor) -> None:
        if x.ndim < 2:
            raise ValueError(f"SyncBatchNorm: expected input of shape (N, C) or (N, C, *), got shape {tuple(x.shape)}")

    def _normalize(self, x: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                   use_batch_stats: bool, momentum: float) -> Tensor:
        comm = distributed.communicator(self.process_group) if use_batch_stats else None
        if comm is None or comm.Get_size() == 1:
            return super()._normalize(x, running_mean, running_var, use_batch_stats, momentum)
        return sync_batch_norm(x, running_mean, running_var, self.weight, self.bias, momentum, self.eps, comm)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """Replace every BatchNorm1d/2d/3d in ``module`` (the root included) by a SyncBatchNorm that
        shares its parameters and buffers (so an existing optimizer still holds the right tensors) and
        keeps eps, momentum, frozen flag and train/eval mode. Returns the converted module."""
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group)
            for name in ("weight", "bias"):
                setattr(converted, name, getattr(module, name))
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                converted.register_buffer(name, getattr(module, name))
            converted.frozen = module.frozen
            converted.train(module.training)
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted
