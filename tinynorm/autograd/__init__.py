"""Reverse-mode automatic differentiation: graph recording, the backward engine, grad modes,
gradient checking and graph inspection. ``docs/autograd.md`` walks through how it works."""
from .engine import backward, grad, topological_order
from .function import AccumulateGrad, Context, Function, Node
from .grad_mode import (
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled,
)
from .hooks import RemovableHandle
from .gradcheck import GradcheckError, gradcheck
from .graph import format_graph, to_dot

__all__ = [
    "AccumulateGrad", "Context", "Function", "Node", "GradcheckError", "RemovableHandle", "backward", "enable_grad",
    "format_graph", "grad", "gradcheck", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "no_grad",
    "set_grad_enabled", "to_dot", "topological_order",
]
