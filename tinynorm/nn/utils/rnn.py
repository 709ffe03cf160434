"""``torch.nn.utils.rnn``'s padding helpers: ``pad_sequence`` batches sequences of different lengths
into one padded tensor (what a ``collate_fn`` for text does), ``unpad_sequence`` takes them back out.
Both are differentiable (padding and slicing). Packed sequences are not provided: tinynorm's recurrent
layers take padded batches."""
from __future__ import annotations

from typing import Sequence

from ..._checks import check_tensor
from ...ops.padding import pad
from ...ops.shape import stack
from ...tensor import Tensor


def pad_sequence(sequences: Sequence[Tensor], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Tensors (L_i, *) as one (L, B, *) tensor (``batch_first``: (B, L, *)), L = max L_i, each padded
    with ``padding_value`` after its end (``padding_side='left'``: before its start)."""
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    for index, sequence in enumerate(sequences):
        check_tensor("pad_sequence", f"sequences[{index}]", sequence)
    trailing = {tuple(s.shape[1:]) for s in sequences}
    if len(trailing) != 1 or sequences[0].ndim == 0:
        raise RuntimeError(f"pad_sequence: every sequence must be (L_i, *) with the same trailing shape, got shapes "
                           f"{[list(s.shape) for s in sequences]}")
    length = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = length - s.shape[0]
        amounts = [0, 0] * (s.ndim - 1) + ([missing, 0] if padding_side == "left" else [0, missing])
        padded.append(pad(s, amounts, value=padding_value) if missing else s)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Sequence[int] | Tensor,
                   batch_first: bool = False) -> list[Tensor]:
    """The sequences of a right-padded batch (``pad_sequence``'s output), each cut to its length."""
    check_tensor("unpad_sequence", "padded_sequences", padded_sequences)
    batch = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    lengths = lengths.tolist() if isinstance(lengths, Tensor) else list(lengths)
    if len(lengths) != batch.shape[0]:
        raise ValueError(f"unpad_sequence: {len(lengths)} lengths for a batch of {batch.shape[0]} sequences")
    return [batch[index, :int(length)] for index, length in enumerate(lengths)]
