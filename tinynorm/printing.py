"""How tensors print: PyTorch's ``repr`` (``tensor([1.0000, 2.0000], requires_grad=True)``) and
``set_printoptions``.

The rules are PyTorch's. All elements of a tensor share one format and one width: integers as they
are; floats whose nonzero finite values are all integers as ``1.``; other floats with ``precision``
(4) decimals, or in scientific notation (``1.0000e-05``) when the largest magnitude exceeds 1e8, the
smallest is below 1e-4, or they are more than 1000 apart. Tensors of more than ``threshold`` (1000)
elements show only ``edgeitems`` (3) at each end of every dim, lines wrap at ``linewidth`` (80), and
the suffixes follow: the device unless the CPU, the dtype unless the default float dtype, int64 or
bool, then ``grad_fn=<...>`` or ``requires_grad=True``.
"""
from __future__ import annotations

import dataclasses
import math
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from . import dtypes


@dataclasses.dataclass
class PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


OPTIONS = PrintOptions()
_PROFILES = {"default": PrintOptions(), "short": PrintOptions(precision=2, edgeitems=2),
             "full": PrintOptions(threshold=math.inf)}


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Set how tensors print, as ``torch.set_printoptions``: ``profile`` ('default', 'short', 'full')
    first, then each option given; ``sci_mode`` is always set (None: chosen per tensor)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        chosen = _PROFILES[profile]
        OPTIONS.precision, OPTIONS.threshold = chosen.precision, chosen.threshold
        OPTIONS.edgeitems, OPTIONS.linewidth = chosen.edgeitems, chosen.linewidth
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                        ("linewidth", linewidth)):
        if value is not None:
            setattr(OPTIONS, name, value)
    OPTIONS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current options, as keyword arguments of :func:`set_printoptions`."""
    return dataclasses.asdict(OPTIONS)


@contextmanager
def printoptions(**options: Any) -> Iterator[None]:
    """Print with ``options`` inside a ``with`` block, then restore the previous ones."""
    previous = get_printoptions()
    set_printoptions(**options)
    try:
        yield
    finally:
        set_printoptions(**previous)


class _Formatter:
    """One format and width for all the elements shown of a tensor (PyTorch's ``_Formatter``)."""

    def __init__(self, shown: np.ndarray) -> None:
        self.floating = shown.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.width = True, False, 1
        if not self.floating:
            self.width = max([1] + [len(str(v)) for v in shown.tolist()])
            return
        values = shown.astype(np.float64)
        values = values[np.isfinite(values) & (values != 0)]
        if values.size == 0:
            return
        magnitudes = np.abs(values)
        smallest, largest = magnitudes.min(), magnitudes.max()
        self.int_mode = bool(np.all(values == np.ceil(values)))
        if OPTIONS.sci_mode is None:
            self.sci_mode = bool(largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4)
        else:
            self.sci_mode = OPTIONS.sci_mode
        precision = OPTIONS.precision
        if self.sci_mode:
            lengths = [len(f"{v:.{precision}e}") for v in values.tolist()]
        elif self.int_mode:
            lengths = [len(f"{v:.0f}") + 1 for v in values.tolist()]
        else:
            lengths = [len(f"{v:.{precision}f}") for v in values.tolist()]
        self.width = max(lengths)

    def format(self, value: Any) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.width}.{OPTIONS.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{OPTIONS.precision}f}"
        return text.rjust(self.width)


def _summarized(values: np.ndarray, summarize: bool) -> np.ndarray:
    """The elements that will be shown, flattened (all of them unless ``summarize``)."""
    if not summarize or values.ndim == 0:
        return values.reshape(-1)
    edge = OPTIONS.edgeitems
    if values.ndim > 1 and not edge:
        return values.reshape(-1)[:0]
    rows = list(range(edge)) + list(range(len(values) - edge, len(values))) if len(values) > 2 * edge \
        else range(len(values))
    if values.ndim == 1:
        return values[list(rows)]
    return np.concatenate([_summarized(values[i], True) for i in rows])


def _vector(values: np.ndarray, indent: int, summarize: bool, formatter: _Formatter) -> str:
    per_line = max(1, math.floor((OPTIONS.linewidth - indent) / (formatter.width + 2)))
    edge = OPTIONS.edgeitems
    if summarize and not edge:
        items = ["..."]
    elif summarize and len(values) > 2 * edge:
        items = ([formatter.format(v) for v in values[:edge].tolist()] + [" ..."]
                 + [formatter.format(v) for v in values[-edge:].tolist()])
    else:
        items = [formatter.format(v) for v in values.tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(values: np.ndarray, indent: int, summarize: bool, formatter: _Formatter) -> str:
    if values.ndim == 0:
        return formatter.format(values.item())
    if values.ndim == 1:
        return _vector(values, indent, summarize, formatter)
    edge = OPTIONS.edgeitems
    if summarize and len(values) > 2 * edge:
        rows = ([_nested(values[i], indent + 1, summarize, formatter) for i in range(edge)] + ["..."]
                + [_nested(values[i], indent + 1, summarize, formatter) for i in range(len(values) - edge, len(values))])
    else:
        rows = [_nested(row, indent + 1, summarize, formatter) for row in values]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def format_values(values: np.ndarray, indent: int) -> str:
    """The bracketed elements of a host array, as PyTorch prints a tensor's (continuation lines are
    indented by ``indent`` + 1)."""
    if values.size == 0:
        return "[]"
    summarize = values.size > OPTIONS.threshold
    return _nested(values, indent, summarize, _Formatter(_summarized(values, summarize)))


def tensor_repr(tensor: Any, prefix: str = "tensor(") -> str:
    """``repr(tensor)``: its values and PyTorch's suffixes (device, dtype, size, grad_fn/requires_grad)."""
    values = tensor.numpy()
    indent = len(prefix)
    suffixes = []
    if tensor.device.type != "cpu":
        suffixes.append(f"device='{tensor.device}'")
    dtype = tensor.dtype
    if values.size == 0:
        if values.ndim != 1:
            suffixes.append(f"size={tuple(values.shape)}")
        if dtype != dtypes.get_default_dtype():
            suffixes.append(f"dtype={dtype}")
    else:
        if not OPTIONS.edgeitems:
            suffixes.append(f"size={tuple(values.shape)}")
        if dtype not in (dtypes.get_default_dtype(), dtypes.int64, dtypes.bool_):
            suffixes.append(f"dtype={dtype}")
    if tensor.grad_fn is not None:
        suffixes.append(f"grad_fn=<{tensor.grad_fn.name()}>")
    elif tensor.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + format_values(values, indent), suffixes, indent)


def _with_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """``text`` and its suffixes, each on the last line unless it would pass ``linewidth``."""
    parts = [text]
    line_length = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if line_length + len(suffix) + 2 > OPTIONS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            line_length = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            line_length += len(suffix) + 2
    return "".join(parts) + ")"


def tensor_format(tensor: Any, spec: str) -> str:
    """``format(tensor, spec)``: a 0-d tensor formats as its value (``f"{loss:.3f}"``), any other
    tensor only with an empty spec (as its ``str``), as in PyTorch."""
    if tensor.ndim == 0:
        return format(tensor.item(), spec)
    if spec:
        raise TypeError("unsupported format string passed to Tensor.__format__")
    return repr(tensor)
