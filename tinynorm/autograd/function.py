"""``Function`` and ``Context``: how one differentiable operation records itself in the graph.

An operation is a subclass of :class:`Function` with two static methods::

    class Mul(Function):
        @staticmethod
        def forward(ctx, a, b):            # arrays in, array out
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):           # gradient of the output in, one gradient per input out
            a, b = ctx.saved_tensors
            return grad * b, grad * a

``Mul.apply(x, y)`` unwraps the tensors, runs ``forward`` and, when an input requires grad and grad mode
is on, returns a tensor whose ``grad_fn`` is the context: the context *is* the graph node. It remembers
the nodes of its inputs (``next_nodes``) and their shapes, so the engine can route gradients and sum
broadcast gradients back to each input's shape; ops never unbroadcast themselves. It also remembers the
version of every input (or output) whose array it saved, so that backward refuses to use an array that
was changed in place since (``docs/autograd.md``, section 7).

A view op (``makes_view = True``, with a static ``view(xp, x, *args)``) returns an array that shares its
input's memory; ``apply`` then makes the result a view of the input's tensor: same version counter, and
the steps that derive it from its base, which an in-place write through the view replays.

Deliberate difference from PyTorch: ``forward`` and ``backward`` work on the device's raw arrays
(numpy arrays on the CPU), not on tensors. Backward is therefore never itself recorded, so tinynorm has
no higher-order gradients, and every op stays plain array math that a reader can follow line by line.
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Callable

from ..backends import get_backend
from ..tensor import Tensor, VersionCounter
from .grad_mode import _state as _grad_mode

if TYPE_CHECKING:
    from ..backends.contract import Backend

FREED_MESSAGE = (
    "Trying to backward through the graph a second time, or to read saved tensors after they were "
    "freed. Saved tensors are released after backward; pass retain_graph=True to the first "
    "backward() call if you need to call it again."
)


class Node:
    """A vertex of the backward graph: something that receives the gradient of one tensor."""

    __slots__ = ("hooks", "next_nodes")

    def __init__(self) -> None:
        self.hooks: list[Callable[[Any], Any]] | tuple = ()  # a list once a hook is registered
        self.next_nodes: tuple[Node | None, ...] = ()

    def name(self) -> str:
        return type(self).__name__

    @property
    def next_functions(self) -> tuple[tuple["Node | None", int], ...]:
        """PyTorch's view of ``next_nodes``: a ``(node, 0)`` pair per input (``(None, 0)`` for an input
        that needs no gradient)."""
        return tuple((node, 0) for node in self.next_nodes)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"  # PyTorch's: print(y.grad_fn)


class AccumulateGrad(Node):
    """The node of a leaf tensor that requires grad: adds the arriving gradient into ``leaf.grad``.

    It refers to its leaf weakly. The leaf owns this node (``leaf._accumulator``), and a strong
    reference back would make a cycle that only the garbage collector frees, keeping big leaves and
    their gradients alive after the last user reference is gone. A dropped leaf's gradient has
    nowhere to go, so it is simply skipped.
    """

    __slots__ = ("_leaf",)

    def __init__(self, leaf: Any) -> None:
        super().__init__()
        self._leaf = weakref.ref(leaf)

    @property
    def variable(self) -> Any:
        """The leaf tensor, or None once it has been garbage-collected."""
        return self._leaf()

    def accumulate(self, grad: Any) -> None:
        leaf = self._leaf()
        if leaf is None:
            return
        if grad.dtype != leaf.array.dtype:
            grad = grad.astype(leaf.array.dtype)
        if leaf.grad is None:
            leaf.grad = Tensor._from_array(grad, leaf.device)
        else:
            leaf.grad.array = leaf.grad.array + grad


class Context(Node):
    """The node an op records: its backward function, its inputs' nodes and what backward needs.

    ``forward`` may store small values as attributes (``ctx.axis = 1``) and arrays with
    :meth:`save_for_backward`; both are released after backward unless ``retain_graph=True``.
    """

    # The graph structure lives in slots; an op's own attributes go to ``__dict__``, which
    # ``release`` empties in one call.
    __slots__ = ("function", "xp", "device", "needs_input_grad", "input_meta", "output_shape", "released", "_saved",
                 "saved_versions", "saved_at", "__dict__")

    def __init__(self, function: type["Function"], xp: Backend, device: str, needs_input_grad: tuple[bool, ...]) -> None:
        # Node's fields, set here rather than through super().__init__(): this runs once per op.
        self.hooks = ()
        self.next_nodes = ()
        self.function = function
        self.xp: Backend = xp  # the backend of the device the op runs on (its inputs' device)
        self.device = device  # the output's device; only a device move (ToDevice.forward) changes it
        self.needs_input_grad = needs_input_grad
        self.input_meta: tuple[tuple[tuple[int, ...], Any] | None, ...] = ()
        self.output_shape: tuple[int, ...] = ()
        self.released = False
        self._saved: tuple[Any, ...] = ()
        # (position in _saved, counter, version) for each saved array that holds an input's or the output's
        # memory, and VersionCounter.writes when they were saved.
        self.saved_versions: tuple[Any, ...] = ()
        self.saved_at = 0

    def name(self) -> str:
        """PyTorch's name for the op's node (``MulBackward0``); ``<Class>Backward`` for your own Functions."""
        return self.function.backward_name or self.function.__name__ + "Backward"

    def save_for_backward(self, *arrays: Any) -> None:
        self._saved = arrays

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        """What forward saved, after checking that no saved input or output was changed in place since."""
        if self.released:
            raise RuntimeError(FREED_MESSAGE)
        versions = self.saved_versions
        if not versions or self.saved_at == VersionCounter.writes:  # nothing written in place since
            return self._saved
        for position, counter, version in versions:
            if counter.value != version:
                array = self._saved[position]
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: a {array.dtype} tensor of shape {tuple(array.shape)}, saved by {self.name()}, "
                    f"is at version {counter.value}; expected version {version} instead. It was changed in "
                    "place (an optimizer step, +=, a method ending in _, or x[...] = ...) after the op that "
                    "saved it ran: make the change before that op, or change a clone() instead."
                )
        return self._saved

    def release(self) -> None:
        """Drop everything saved for backward (called by the engine after use)."""
        self._saved = self.saved_versions = ()
        self.__dict__.clear()
        self.released = True


class Function:
    """Base class of differentiable operations; subclasses define ``forward`` and ``backward``."""

    backward_name: str | None = None  # PyTorch's node name for tinynorm's own ops (``AddBackward0``)
    makes_view = False  # True for ops whose result may share its first input's memory (see module docstring)

    @staticmethod
    def forward(ctx: Context, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` on the arrays behind ``args`` and record the op if a gradient is needed."""
        device = None
        arrays = []
        needs = []
        for arg in args:
            if isinstance(arg, Tensor):
                if device is None:
                    device = arg.device
                elif arg.device != device:
                    raise RuntimeError(
                        f"{cls.__name__}: expected all tensors on the same device, got {device} and "
                        f"{arg.device}; move them with .to(device) first"
                    )
                arrays.append(arg.array)
                needs.append(arg.requires_grad)
            else:
                arrays.append(arg)
                needs.append(False)
        device = device or "cpu"
        xp = get_backend(device)
        record = _grad_mode.enabled and True in needs
        ctx = Context(cls, xp, device, tuple(needs))
        out = cls.forward(ctx, *arrays, **kwargs)
        out = (xp if ctx.device == device else get_backend(ctx.device)).as_array(out)
        result = Tensor._from_array(out, ctx.device)
        if cls.makes_view and xp.shares_storage(out, arrays[0]):
            result._become_view_of(args[0], (cls, tuple(arrays[1:]), kwargs))
        if record:
            # List comprehensions, not generator expressions: this runs once per recorded op, and
            # tuple([...]) is measurably cheaper for a handful of items.
            ctx.next_nodes = tuple([(arg.grad_fn or _node_of(arg)) if need else None for arg, need in zip(args, needs)])
            ctx.input_meta = tuple([(arg.array.shape, arg.array.dtype) if need else None
                                    for arg, need in zip(args, needs)])
            ctx.output_shape = out.shape
            if ctx._saved:
                ctx.saved_versions = _saved_versions(xp, ctx._saved, arrays, args, result)
                ctx.saved_at = VersionCounter.writes
            result.requires_grad = True
            result.grad_fn = ctx
        return result


def _saved_versions(xp: Any, saved: tuple, arrays: list, args: tuple, output: Tensor) -> tuple:
    """``(position, counter, version)`` for each saved array that holds an input's or the output's memory
    (itself or a view of it), so backward can tell whether that memory was changed in place since.

    This runs for every recorded op that saves something, so the usual cases (a saved input or output,
    found by identity) take a few comparisons and no function calls."""
    versions = []
    out = output.array
    for position, array in enumerate(saved):
        if array is out:
            tensor = output
        else:
            for index, candidate in enumerate(arrays):
                if candidate is array:
                    tensor = args[index]  # a Python number saved as such is its own candidate: skipped below
                    break
            else:
                tensor = _input_viewed_by(xp, array, args) if hasattr(array, "shape") else None
            if not isinstance(tensor, Tensor):
                continue
        counter = tensor._version_counter
        if counter is None:
            counter = tensor._version_counter = VersionCounter()
        versions.append((position, counter, counter.value))
    return tuple(versions)


def _input_viewed_by(xp: Any, array: Any, args: tuple) -> Tensor | None:
    """The input whose memory ``array`` (a view the op made, such as a reshape) shows, if any."""
    storage = xp.storage_of(array)
    for arg in args:
        if isinstance(arg, Tensor) and xp.storage_of(arg.array) is storage:
            return arg
    return None


def _node_of(tensor: Any) -> Node:
    """The node that receives ``tensor``'s gradient: its ``grad_fn``, or its leaf accumulator."""
    if tensor.grad_fn is not None:
        return tensor.grad_fn
    if tensor._accumulator is None:
        tensor._accumulator = AccumulateGrad(tensor)
    return tensor._accumulator

