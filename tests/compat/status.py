"""Which tutorial scripts are expected to fail on tinynorm, and why: the one table to edit.

Each entry names a script, the reason it fails (the missing name, or the deliberate difference in
docs/differences.md) and how: a piece of the exception line it raises (``Fails``), or the first printed
line that differs from PyTorch's (``Differs``). The test of such a script is a strict expected failure
only while it fails in that way; a script that now passes, or fails in another way, fails its test, so
its entry must then be removed or updated. ``python -m tests.compat.report`` prints the
status of every script on the current tree, with the entries to change.
"""

from typing import NamedTuple


class Fails(NamedTuple):
    """The tinynorm run raises an exception whose line contains ``error``."""
    reason: str
    error: str


class Differs(NamedTuple):
    """The tinynorm run runs to the end, but its printed ``line`` (1-based) is the first that differs."""
    reason: str
    line: int


EXPECTED_FAILURES: dict[str, Fails | Differs] = {
    "activations": Fails("missing nn.SiLU", "has no attribute 'SiLU'"),
    "attention_einsum": Fails("missing torch.einsum", "has no attribute 'einsum'"),
    "autograd_basics": Fails("missing F.binary_cross_entropy_with_logits",
                             "has no attribute 'binary_cross_entropy_with_logits'"),
    "batchnorm_train_eval": Fails("missing var(unbiased=)", "unexpected keyword arguments ['unbiased']"),
    "batchnorm_vs_layernorm": Fails("missing var(unbiased=)", "unexpected keyword arguments ['unbiased']"),
    "cifar_tutorial": Fails("missing nn.CrossEntropyLoss", "has no attribute 'CrossEntropyLoss'"),
    "clip_grad_norm": Fails("missing nn.MSELoss", "has no attribute 'MSELoss'"),
    "conv_pooling_shapes": Fails("missing Conv2d(padding='same')",
                                 "padding must be an int >= 0 or a pair of them, got 'same'"),
    "custom_dataset": Fails("missing torch.is_tensor", "has no attribute 'is_tensor'"),
    "data_pipeline": Differs("missing torch.Size: shapes print as tuples", 1),
    "dcgan_step": Fails("missing nn.ConvTranspose2d", "has no attribute 'ConvTranspose2d'"),
    "dtype_promotion": Fails("missing Tensor.__floordiv__ (//)", "unsupported operand type(s) for //"),
    "dynamic_net": Fails("missing torch.sin", "has no attribute 'sin'"),
    "embedding_classifier": Fails("missing nn.Embedding(padding_idx=)", "unexpected keyword argument 'padding_idx'"),
    "forward_hooks": Fails("missing torch.allclose", "has no attribute 'allclose'"),
    "freeze_finetune": Fails("missing torch.equal", "has no attribute 'equal'"),
    "grad_modes_hooks": Fails("missing torch.inference_mode", "has no attribute 'inference_mode'"),
    "gradient_penalty": Fails("missing autograd.grad(only_inputs=); then no higher-order gradients "
                              "(create_graph=True, docs/differences.md)",
                              "unexpected keyword argument 'only_inputs'"),
    "gru_sequence": Fails("missing nn.GRU", "has no attribute 'GRU'"),
    "instance_group_norm": Fails("missing var(unbiased=)", "unexpected keyword arguments ['unbiased']"),
    "legendre_function": Fails("missing torch.device", "has no attribute 'device'"),
    "lstm_classifier": Fails("missing Tensor.any(dim=)", "unexpected keyword argument 'dim'"),
    "mnist_convnet": Fails("missing torch.device", "has no attribute 'device'"),
    "module_containers": Fails("missing nn.Sequential(OrderedDict(...))", "must be a Module, got OrderedDict"),
    "multilabel_bce": Fails("missing F.one_hot", "has no attribute 'one_hot'"),
    "ngram_language_model": Fails("missing nn.NLLLoss", "has no attribute 'NLLLoss'"),
    "optim_rmsprop": Fails("missing torch.sin", "has no attribute 'sin'"),
    "polynomial_autograd": Fails("missing torch.set_default_device", "has no attribute 'set_default_device'"),
    "polynomial_module": Fails("missing torch.sin", "has no attribute 'sin'"),
    "polynomial_tensors": Fails("missing torch.device", "has no attribute 'device'"),
    "prenorm_postnorm": Fails("missing Tensor.norm", "has no attribute 'norm'"),
    "quickstart": Fails("missing torch.accelerator", "has no attribute 'accelerator'"),
    "random_seeding": Fails("missing torch.equal", "has no attribute 'equal'"),
    "random_split_generator": Fails("missing Tensor.__mod__ (%)", "unsupported operand type(s) for %"),
    "reset_batchnorm_stats": Fails("missing nn.modules", "has no attribute 'modules'"),
    "resnet_block": Fails("missing nn.CrossEntropyLoss", "has no attribute 'CrossEntropyLoss'"),
    "rmsnorm_module": Fails("missing torch.allclose", "has no attribute 'allclose'"),
    "save_load_models": Fails("missing torch.device", "has no attribute 'device'"),
    "selection_ops": Fails("missing torch.topk", "has no attribute 'topk'"),
    "sequential_mse": Fails("missing torch.sin", "has no attribute 'sin'"),
    "tensor_basics": Fails("missing torch.equal", "has no attribute 'equal'"),
    "tensor_printing": Fails("missing torch.set_printoptions", "has no attribute 'set_printoptions'"),
    "tensor_reductions": Fails("missing torch.max", "has no attribute 'max'"),
    "transformer_encoder": Fails("missing torch.sin", "has no attribute 'sin'"),
    "views_inplace": Fails("missing Tensor.stride", "has no attribute 'stride'"),
    "weight_init_apply": Fails("missing torch.equal", "has no attribute 'equal'"),
    "zscore_standardization": Fails("missing std(unbiased=)", "unexpected keyword arguments ['unbiased']"),
}


def shows_expected_failure(entry: Fails | Differs, error_line: str, problems: list[str]) -> bool:
    """Whether a tinynorm run fails as ``entry`` says, from its exception line ('' when it ran to the end)
    and its differences from PyTorch's output (if compared)."""
    if isinstance(entry, Fails):
        return entry.error in error_line if error_line else False
    differing_lines = [problem for problem in problems if problem.startswith("line ")]
    return not error_line and bool(differing_lines) and differing_lines[0].startswith(f"line {entry.line}:")
