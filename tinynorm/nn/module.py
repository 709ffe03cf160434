"""``Module``: the base class of layers and models, and ``Parameter``, a tensor a module learns.

Assigning a ``Parameter`` or a ``Module`` to an attribute registers it, as in PyTorch, so
``parameters()``, ``state_dict()``, ``train()``/``eval()`` and ``to()`` reach the whole tree.
Buffers (``register_buffer``) are tensors that are part of the state but not learned, such as
BatchNorm's running statistics; a non-persistent buffer is left out of the state dict.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, MutableMapping
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

from .. import dtypes
from ..autograd.hooks import RemovableHandle
from ..tensor import Tensor
from . import hooks


class Parameter(Tensor):
    """A tensor that is a module's learnable parameter (``requires_grad=True`` by default)."""

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            data = Tensor._from_array(np.empty(0, dtypes.get_default_dtype()))
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: expected a Tensor, got {type(data).__name__}; wrap it with tinynorm.tensor()")
        super().__init__(data.array, requires_grad=requires_grad, device=data.device)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class Buffer(Tensor):
    """``nn.Buffer(data, persistent=True)``: a tensor that, assigned to a module attribute, is registered
    as a buffer (``module.stats = nn.Buffer(zeros(3))`` is ``register_buffer('stats', zeros(3))``)."""

    def __init__(self, data: Tensor, persistent: bool = True) -> None:
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer: expected a Tensor, got {type(data).__name__}; wrap it with tinynorm.tensor()")
        super().__init__(data.array, requires_grad=data.requires_grad, device=data.device)
        self.persistent = persistent


class IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]


class Module:
    """Base class for all layers: subclasses set attributes in ``__init__`` and define ``forward``."""

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        for registry in ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks"):
            object.__setattr__(self, registry, OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or self._backward_pre_hooks:
            return hooks.call_with_hooks(self, args, kwargs)
        return self.forward(*args, **kwargs)

    # ---------------------------------------------------------------------------------- hooks
    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Call ``hook(module, args)`` before each forward (see :mod:`tinynorm.nn.hooks`)."""
        return hooks.add_hook(self._forward_pre_hooks, hook, prepend, with_kwargs=with_kwargs)

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after each forward."""
        return hooks.add_hook(self._forward_hooks, hook, prepend, with_kwargs=with_kwargs, always_call=always_call)

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` when the gradients of the outputs are computed."""
        return hooks.add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` when the gradients of the inputs are computed."""
        return hooks.add_hook(self._backward_hooks, hook, prepend)

    # ---------------------------------------------------------------------------- registration
    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"call super().__init__() in {type(self).__name__}.__init__ before assigning {name!r}")
        if isinstance(value, Buffer):
            self._forget(name, keep=self._buffers)
            self.register_buffer(name, value, value.persistent)
        elif isinstance(value, (Parameter, Module)):
            registry = self._parameters if isinstance(value, Parameter) else self._modules
            self._forget(name, keep=registry)  # a replaced entry keeps its place, as in PyTorch
            registry[name] = value
        elif name in self._parameters or name in self._modules:
            if value is not None:
                kind = "parameter" if name in self._parameters else "submodule"
                raise TypeError(f"cannot assign a {type(value).__name__} as {kind} {name!r} (a {kind} or None expected)")
            (self._parameters if name in self._parameters else self._modules)[name] = None
        elif name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"buffer {name!r} must be a Tensor or None, got {type(value).__name__}")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str, keep: dict) -> None:
        """Remove ``name`` from the attributes and from every registry but ``keep`` before it is
        registered there."""
        self.__dict__.pop(name, None)
        for registry in (self._parameters, self._buffers, self._modules):
            if registry is not keep:
                registry.pop(name, None)
        self._non_persistent.discard(name)

    def __getattr__(self, name: str) -> Any:
        for registry in ("_parameters", "_buffers", "_modules"):
            entries = self.__dict__.get(registry)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        for registry in (self._parameters, self._buffers, self._modules):
            if name in registry:
                del registry[name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def _check_name(self, name: Any, kind: str, registry: dict) -> None:
        """PyTorch's checks of a new parameter, buffer or submodule name."""
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if name in self.__dict__ and name not in registry:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        self._check_name(name, "parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Register a tensor that is state but not a parameter (e.g. running statistics)."""
        self._check_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module", self._modules)
        self._modules[name] = module

    def register_module(self, name: str, module: "Module | None") -> None:
        """Alias of :meth:`add_module`."""
        self.add_module(name, module)

    def get_submodule(self, target: str) -> "Module":
        """The submodule at the dotted path ``target`` (``''``: this module)."""
        if target == "":
            return self
        module: Module = self
        for item in target.split("."):
            if not hasattr(module, item):
                raise AttributeError(module._get_name() + " has no attribute `" + item + "`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return module

    def _member(self, target: str) -> tuple["Module", str]:
        """The module holding the dotted path ``target`` and the last name, checked to exist there."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(module._get_name() + " has no attribute `" + name + "`")
        return module, name

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at the dotted path ``target`` (``'layer.0.weight'``)."""
        module, name = self._member(target)
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path ``target`` (``'bn.running_mean'``)."""
        module, name = self._member(target)
        if name not in module._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(module, name)

    # ------------------------------------------------------------------------------ traversal
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, "Module"]]:
        """This module and every submodule, depth first (each once unless ``remove_duplicate=False``),
        with dotted names."""
        memo = set() if memo is None else memo
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self, remove_duplicate: bool = True) -> Iterator["Module"]:
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        seen: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator["Module"]:
        for _, module in self.named_children():
            yield module

    def _named_members(self, registry: str, prefix: str, recurse: bool,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        seen: set[int] = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_name, module in modules:
            for name, value in getattr(module, registry).items():
                if value is None or id(value) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (f"{module_name}.{name}" if module_name else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)  # type: ignore[return-value]

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def num_parameters(self, trainable_only: bool = False) -> int:
        """How many numbers the model learns (all parameters, or only those that require grad)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)

    # ------------------------------------------------------------------------------ modes
    def train(self, mode: bool = True) -> "Module":
        """Training mode (e.g. BatchNorm uses batch statistics, Dropout drops); returns self."""
        if not isinstance(mode, (bool, np.bool_)):
            raise ValueError(f"training mode is expected to be boolean, got {mode!r}")
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
        return self

    def eval(self) -> "Module":
        """Evaluation mode: same as ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for param in self.parameters():
            if set_to_none:
                param.grad = None
            elif param.grad is not None:
                param.grad.array = param.grad._backend.zeros_like(param.grad.array)

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call ``fn`` on every submodule, children before their parent, then on this module; returns self.

        The order is PyTorch's: each child's whole subtree in registration order, then the parent.
        """
        if not callable(fn):
            raise TypeError(f"apply: fn must be a function taking a module, got {type(fn).__name__}")
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def to(self, *args: Any, dtype: Any = None, device: Any = None) -> "Module":
        """Move/cast every parameter and buffer in place: ``to('cuda')``, ``to(tinynorm.float64)``.

        Only floating-point tensors change dtype (``num_batches_tracked`` stays int64).
        """
        for arg in args:
            if isinstance(arg, str):
                device = arg
            else:
                dtype = arg
        if dtype is not None and not dtypes.is_floating(dtypes.as_dtype(dtype)):
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}")
        for tensor in self._tensors():
            cast = dtype if tensor.dtype.kind == "f" else None
            _replace(tensor, tensor.detach().to(dtype=cast, device=device))
        return self

    def _tensors(self) -> Iterator[Tensor]:
        """Every parameter and buffer of the module tree."""
        for module in self.modules():
            for registry in (module._parameters, module._buffers):
                for value in registry.values():
                    if value is not None:
                        yield value

    def float(self) -> "Module":
        return self.to(dtype=dtypes.float32)

    def double(self) -> "Module":
        return self.to(dtype=dtypes.float64)

    def half(self) -> "Module":
        return self.to(dtype=dtypes.float16)

    def bfloat16(self) -> "Module":
        raise NotImplementedError("bfloat16: tinynorm keeps its arrays in numpy, which has no bfloat16 dtype; use "
                                  "half() (float16) or float() instead")

    def type(self, dst_type: Any) -> "Module":
        """Cast every parameter and buffer, floating or not, to ``dst_type``."""
        dtype = dtypes.as_dtype(dst_type)
        for tensor in self._tensors():
            _replace(tensor, tensor.detach().to(dtype=dtype))
        return self

    def cpu(self) -> "Module":
        return self.to("cpu")

    def cuda(self, device: Any = None) -> "Module":
        return self.to("cuda" if device is None else device)

    # -------------------------------------------------------------------------- state dict
    def state_dict(self, *, destination: "MutableMapping[str, Tensor] | None" = None, prefix: str = "",
                   keep_vars: bool = False) -> "MutableMapping[str, Tensor]":
        """Parameters and persistent buffers by dotted name, as detached tensors sharing memory (the
        tensors themselves with ``keep_vars=True``), added to ``destination`` when given. A module
        reached by two paths is listed under both, as in PyTorch."""
        if not isinstance(prefix, str):
            raise TypeError(f"state_dict: prefix must be a str, got {type(prefix).__name__}")
        state = OrderedDict() if destination is None else destination
        for module_name, module in self.named_modules(prefix=prefix.rstrip("."), remove_duplicate=False):
            dotted = f"{module_name}." if module_name else ""
            for name, param in module._parameters.items():
                if param is not None:
                    state[dotted + name] = param if keep_vars else param.detach()
            for name, buffer in module._buffers.items():
                if buffer is not None and name not in module._non_persistent:
                    state[dotted + name] = buffer if keep_vars else buffer.detach()
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> IncompatibleKeys:
        """Copy values into this module's parameters and buffers, keeping their dtypes and devices.

        With ``strict=True`` (the default) missing and unexpected keys are an error that lists them.
        A wrong shape, a non-floating value for a floating tensor, or a value an integer tensor cannot
        hold exactly (NaN, 1.5, 2**63 for ``num_batches_tracked``) is always an error naming the key.
        Every value is converted and checked before the first one is written, so a failed load leaves
        the module exactly as it was.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"load_state_dict: expected state_dict to be a dict-like mapping of names to tensors, "
                            f"got {type(state_dict).__name__}")
        own = self.state_dict()
        missing = [key for key in own if key not in state_dict and not self._kept_when_missing(key)]
        unexpected = [key for key in state_dict if key not in own]
        if strict and (missing or unexpected):
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}: "
                f"missing keys {missing}, unexpected keys {unexpected}"
            )
        converted, problems = {}, []
        for key, target in own.items():
            if key not in state_dict:
                continue
            if isinstance(target.array, np.ndarray) and not target.array.flags.writeable:
                problems.append(f"{key}: the model's tensor is read-only (made from a read-only numpy array)")
                continue
            try:
                converted[key] = _converted_value(state_dict[key], target)
            except ValueError as error:
                problems.append(f"{key}: {error}")
        if problems:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n  " + "\n  ".join(problems))
        for key, array in converted.items():
            target = own[key]
            target.array[...] = target._backend.from_numpy(array)
        return IncompatibleKeys(missing, unexpected)

    def _kept_when_missing(self, key: str) -> bool:
        """Whether a state-dict key may be absent without being reported missing: a submodule's names in
        ``_optional_state`` (BatchNorm's ``num_batches_tracked``, which PyTorch keeps as it is when a
        state dict without version metadata lacks it)."""
        path, _, name = key.rpartition(".")
        return name in getattr(self.get_submodule(path), "_optional_state", ())

    # ------------------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        """The arguments shown between the parentheses of ``repr(module)``."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        """PyTorch's layout: ``Name(extra)`` on one line, or the extra lines and ``(name): child``
        lines indented inside."""
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + indent(repr(module)) for name, module in self._modules.items()]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if len(extra_lines) == 1 and not child_lines:
            text += extra_lines[0]
        elif lines:
            text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"


def indent(text: str, spaces: int = 2) -> str:
    """``text`` with every line after the first indented by ``spaces`` (blank lines stay empty)."""
    first, *rest = text.split("\n")
    if not rest:
        return text
    return "\n".join([first] + [(" " * spaces + line) if line.strip() else "" for line in rest])


def _replace(tensor: Tensor, moved: Tensor) -> None:
    """Make ``tensor`` (a parameter or buffer) hold ``moved``'s values in place, keeping its identity;
    its gradient follows."""
    tensor.array, tensor.device = moved.array, moved.device
    if tensor.grad is not None:
        tensor.grad = tensor.grad.to(dtype=tensor.dtype, device=tensor.device)


def _converted_value(value: Any, target: Tensor) -> np.ndarray:
    """A checkpoint value (tensor, array, number or nested list) as a host array of ``target``'s dtype
    and shape, or ``ValueError`` saying why it cannot be loaded into ``target`` without a silent change."""
    try:
        array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
    except (TypeError, ValueError, OverflowError, RuntimeError) as error:
        raise ValueError(f"a {type(value).__name__} that is not an array of numbers ({error})") from None
    if array.dtype.kind not in "biuf":
        received = f"the int {value} (beyond 64 bits)" if isinstance(value, int) else f"a {type(value).__name__}"
        raise ValueError(f"{received} in the checkpoint, numbers of dtype {target.dtype} in the model")
    if tuple(array.shape) != tuple(target.shape):
        raise ValueError(f"size mismatch: copying a param with shape {tuple(array.shape)} from checkpoint, the shape "
                         f"in current model is {tuple(target.shape)}")
    if target.dtype.kind == "f":
        if array.dtype.kind != "f":
            raise ValueError(f"dtype {array.dtype} in the checkpoint, {target.dtype} in the model")
        with np.errstate(over="ignore"):  # 1e300 into float32 is inf, as in PyTorch
            return array.astype(target.dtype)
    inexact = _first_inexact_integer(array, target.dtype)
    if inexact is not None:
        raise ValueError(f"the value {inexact!r} in the checkpoint, which the model's {target.dtype} tensor cannot "
                         "hold exactly")
    return array.astype(target.dtype)


def _first_inexact_integer(array: np.ndarray, dtype: np.dtype) -> Any:
    """The first value of ``array`` that is not an integer in ``dtype``'s range (NaN, 1.5, 2**63 for
    int64), or None when every value converts exactly."""
    if array.size == 0:
        return None
    low, high = (0, 1) if dtype.kind == "b" else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
    whole = np.ones(array.shape, bool)
    if array.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            whole = np.isfinite(array) & (array == np.trunc(array))
    if whole.all() and low <= array.min().item() and array.max().item() <= high:  # .item(): exact Python numbers
        return None
    for value, is_whole in zip(array.reshape(-1).tolist(), whole.reshape(-1).tolist()):
        if not (is_whole and low <= value <= high):
            return value
    return None
