"""Data-parallel training over MPI: every process (rank) holds a full copy of the model, trains on its
own shard of each global batch, and the ranks average their gradients before each optimizer step.

    mpiexec -n 4 python train.py

    from tinynorm import distributed as dist
    dist.init()                                   # mpi4py's COMM_WORLD unless you pass a communicator
    model = dist.DistributedDataParallel(model)   # rank 0's parameters and buffers go to every rank
    ...
    loss.backward()
    model.allreduce_gradients()                   # the explicit step PyTorch hides in backward hooks
    optimizer.step()

Messages are MPI collectives through mpi4py, which is imported only when a function here needs it, so
tinynorm itself works without it. Every rank must make the same collective calls in the same order:
all of them call ``allreduce_gradients`` (even a rank whose shard was empty) and run the same forward
and backward passes. See docs/distributed.md.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from .autograd import grad_mode
from .nn.module import Module
from .tensor import Tensor
from .utils.data.distributed import DistributedSampler  # noqa: F401  (its home is tinynorm.utils.data)

INSTALL_HINT = 'pip install "tinynorm[mpi]" (mpi4py and the mpich MPI library)'

_default_comm: Any = None


def mpi() -> Any:
    """mpi4py's ``MPI`` module, imported on first use, with a clear error when it is missing."""
    try:
        from mpi4py import MPI
    except ImportError:
        raise ImportError(f"tinynorm.distributed needs mpi4py and an MPI library: {INSTALL_HINT}") from None
    return MPI


def init(comm: Any = None) -> Any:
    """Set the default communicator (mpi4py's ``COMM_WORLD`` when ``comm`` is None) and return it.

    Optional: the functions below call it themselves on first use. Call it with a sub-communicator
    (``COMM_WORLD.Split(...)``) to train on a subset of the processes.
    """
    global _default_comm
    _default_comm = comm if comm is not None else mpi().COMM_WORLD
    return _default_comm


def is_initialized() -> bool:
    return _default_comm is not None


def communicator(comm: Any = None) -> Any:
    """``comm`` itself, or the default communicator (initialized on first use)."""
    if comm is not None:
        return comm
    return _default_comm if _default_comm is not None else init()


def get_world_size(comm: Any = None) -> int:
    """How many processes take part (1 when the script was not started by mpiexec)."""
    return communicator(comm).Get_size()


def get_rank(comm: Any = None) -> int:
    """This process's index, from 0 to ``get_world_size() - 1``."""
    return communicator(comm).Get_rank()


# ------------------------------------------------------------------------------------- buckets
def _buckets(tensors: Sequence[Tensor], bucket_bytes: float) -> list[list[Tensor]]:
    """Split ``tensors`` into groups of one dtype and at most ``bucket_bytes`` each (a larger tensor
    gets a group of its own), keeping their order. Each group travels as one flat message."""
    by_dtype: dict[Any, list[Tensor]] = {}
    for tensor in tensors:
        by_dtype.setdefault(tensor.dtype, []).append(tensor)
    buckets = []
    for group in by_dtype.values():
        bucket: list[Tensor] = []
        size = 0
        for tensor in group:
            if bucket and size + tensor.array.nbytes > bucket_bytes:
                buckets.append(bucket)
                bucket, size = [], 0
            bucket.append(tensor)
            size += tensor.array.nbytes
        buckets.append(bucket)
    return buckets


def _offsets(bucket: Sequence[Tensor]) -> Iterator[tuple[Tensor, slice]]:
    """Each tensor of a bucket with its slice of the bucket's flat buffer."""
    start = 0
    for tensor in bucket:
        yield tensor, slice(start, start + tensor.numel())
        start += tensor.numel()


def _parameters(model_or_params: Module | Iterable[Tensor]) -> list[Tensor]:
    params = model_or_params.parameters() if isinstance(model_or_params, Module) else model_or_params
    return [p for p in params if p.requires_grad]


def allreduce_gradients(model_or_params: Module | Iterable[Tensor], comm: Any = None,
                        bucket_size_mb: float = 25.0) -> None:
    """Replace every gradient by its average over the ranks; call it after ``backward()`` on every rank.

    The gradients are packed into flat buffers of about ``bucket_size_mb`` each (one per dtype at
    least), one ``Allreduce`` per buffer: a few large messages cost far less latency than one per
    parameter. A parameter without a gradient on this rank contributes zeros, so every rank joins
    the same collectives; each bucket also carries one "has a gradient" count per parameter, and a
    parameter that no rank gave a gradient keeps ``grad = None`` (as PyTorch's DDP).

    Averaging matches single-process training on the whole global batch when each rank's loss is
    its share of the global mean: ``sum of local losses * world_size / global_batch_size``, which is
    the local mean when the shards have equal sizes.
    """
    comm = communicator(comm)
    world = comm.Get_size()
    if world == 1:
        return
    MPI = mpi()
    for bucket in _buckets(_parameters(model_or_params), bucket_size_mb * 2**20):
        numel = sum(p.numel() for p in bucket)
        flat = np.zeros(numel + len(bucket), dtype=bucket[0].dtype)
        grads, has_grad = flat[:numel], flat[numel:]
        for i, (param, part) in enumerate(_offsets(bucket)):
            if param.grad is not None:
                grads[part] = param.grad.numpy().reshape(-1)
                has_grad[i] = 1
        comm.Allreduce(MPI.IN_PLACE, flat, op=MPI.SUM)
        grads /= world
        for i, (param, part) in enumerate(_offsets(bucket)):
            if has_grad[i]:
                average = param._backend.from_numpy(grads[part].reshape(param.shape).copy())
                param.grad = Tensor._from_array(average, param.device)


def _broadcast(tensors: Sequence[Tensor], root: int, comm: Any, bucket_size_mb: float) -> None:
    """Overwrite ``tensors`` in place with rank ``root``'s values, one ``Bcast`` per bucket."""
    for bucket in _buckets(tensors, bucket_size_mb * 2**20):
        flat = np.concatenate([t.numpy().reshape(-1) for t in bucket])
        comm.Bcast(flat, root=root)
        for tensor, part in _offsets(bucket):
            tensor.array[...] = tensor._backend.from_numpy(flat[part].reshape(tensor.shape))


def broadcast_parameters(model: Module, root: int = 0, comm: Any = None, bucket_size_mb: float = 25.0) -> None:
    """Give every rank rank ``root``'s parameters AND buffers (running statistics), so that all
    replicas start identical whatever their random initialization."""
    comm = communicator(comm)
    if comm.Get_size() > 1:
        _broadcast(list(model.parameters()) + list(model.buffers()), root, comm, bucket_size_mb)


class DistributedDataParallel(Module):
    """Wrap ``module`` for data-parallel training: ``forward`` is the module's forward; after
    ``backward()`` every rank calls :meth:`allreduce_gradients`, then the optimizer steps.

    At construction rank 0's parameters and buffers are broadcast to every rank. With
    ``broadcast_buffers=True`` (PyTorch's default) each forward with grad mode on first copies rank
    0's buffers to every rank, so plain BatchNorm's running statistics are rank 0's on all ranks.

    Differences from PyTorch's DDP: PyTorch all-reduces each bucket from a backward hook as soon as
    its gradients are ready, overlapping communication with the rest of backward; here the gradient
    average is one explicit call after backward, so its communication time is not hidden behind the
    backward computation; in exchange it is simple to read and to debug. There is no ``no_sync()``: to
    accumulate gradients over several backwards, call ``allreduce_gradients`` only before the step.
    """

    def __init__(self, module: Module, comm: Any = None, bucket_size_mb: float = 25.0,
                 broadcast_buffers: bool = True) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be a tinynorm Module, got {type(module).__name__}")
        if not bucket_size_mb > 0:
            raise ValueError(f"DistributedDataParallel: bucket_size_mb must be > 0, got {bucket_size_mb!r}")
        self.module = module
        self.comm = communicator(comm)
        self.bucket_size_mb = bucket_size_mb
        self.broadcast_buffers = broadcast_buffers
        broadcast_parameters(module, 0, self.comm, bucket_size_mb)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self.broadcast_buffers and grad_mode.is_grad_enabled() and self.comm.Get_size() > 1:
            _broadcast(list(self.module.buffers()), 0, self.comm, self.bucket_size_mb)
        return self.module(*args, **kwargs)

    def allreduce_gradients(self) -> None:
        """Average the gradients over the ranks (see :func:`allreduce_gradients`)."""
        allreduce_gradients(self.module, self.comm, self.bucket_size_mb)
