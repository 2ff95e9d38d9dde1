"""Variable-length batches for the recurrent layers: ``PackedSequence`` and the pack/pad helpers.

A packed sequence holds the rows of all sequences time step by time step,
longest sequence first: ``data`` is ``(sum(lengths), *)`` and
``batch_sizes[t]`` says how many sequences are still running at step ``t``.
Every conversion here is one ``index_select`` (a gather whose backward
scatters), so gradients flow through packing and padding.
"""

# ruff: noqa: A002 - torch names the tensor argument `input`

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from mininn._factories import full
from mininn._factories import tensor as _tensor
from mininn._functions.join import cat
from mininn.tensor import Tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpad_sequence",
    "pack_sequence",
    "unpack_sequence",
]

_UNSORTED_MESSAGE = (
    "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
    "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if "
    "you do not need ONNX exportability."
)


class _PackedFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


def _converter_to(dtype: str) -> Callable[[PackedSequence], PackedSequence]:
    """A ``PackedSequence`` method such as ``double()``: the sequence with ``data`` in ``dtype``."""

    def convert(self: PackedSequence) -> PackedSequence:
        return self.to(dtype=dtype)

    return convert


class PackedSequence(_PackedFields):
    """The rows of a batch of sequences, time step by time step; what the RNN layers take and give.

    Made by :func:`pack_padded_sequence` or :func:`pack_sequence`, not by hand.

    Attributes:
        data: ``(sum(lengths), *)`` rows, step 0 of every sequence first.
        batch_sizes: int64 ``(max length,)``: sequences still running at each step.
        sorted_indices: how the batch was sorted by decreasing length (``None`` if it already was).
        unsorted_indices: the inverse permutation, restoring the caller's order.
    """

    def __new__(cls, data: Any, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data`` converted as ``Tensor.to`` does; the indices follow its device (batch_sizes stays)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self

        def move(t: Tensor | None) -> Tensor | None:
            return None if t is None else t.to(data.device)

        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def cuda(self, device: Any = None) -> PackedSequence:
        return self.to("cuda" if device is None else device)

    double = _converter_to("float64")
    float = _converter_to("float32")
    half = _converter_to("float16")
    long = _converter_to("int64")
    int = _converter_to("int32")
    short = _converter_to("int16")
    char = _converter_to("int8")
    byte = _converter_to("uint8")

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` lives on a GPU."""
        return self.data.is_cuda


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a 1-D ``permutation`` (``None`` stays ``None``)."""
    if permutation is None:
        return None
    perm = np.asarray(permutation.numpy() if isinstance(permutation, Tensor) else permutation)
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(perm.size, dtype=perm.dtype)
    return _tensor(inverse)


def _as_int_array(values: Any) -> np.ndarray:
    if isinstance(values, Tensor):
        values = values.numpy()
    return np.asarray(values, dtype=np.int64).reshape(-1)


def _check_lengths(lengths: np.ndarray, batch: int, steps: int, enforce_sorted: bool) -> None:
    """torch's checks, in its order; lengths past the padded length are our own error."""
    if lengths.size != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.size} (batch_size={batch})"
        )
    if lengths[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0"
        )
    if enforce_sorted and np.any(lengths[1:] > lengths[:-1]):
        raise RuntimeError(_UNSORTED_MESSAGE)
    if lengths[0] > steps:
        raise ValueError(f"lengths must not exceed the padded length {steps}, but got {int(lengths[0])}")


def pack_padded_sequence(input: Tensor, lengths: Tensor | Sequence[int], batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of sequences of ``lengths``.

    With ``enforce_sorted=False`` the batch is sorted by decreasing length first
    (stably) and the permutation is kept in the result; otherwise the lengths
    must already decrease.
    """
    if input.dim() < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    lens = _as_int_array(lengths)
    batch_dim = 0 if batch_first else 1
    batch, steps = input.shape[batch_dim], input.shape[1 - batch_dim]
    order = np.arange(lens.size)
    sorted_indices = None
    if not enforce_sorted:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_indices = _tensor(order)
    _check_lengths(lens, batch, steps, enforce_sorted)
    t_idx, k_idx = np.nonzero(np.arange(lens[0])[:, None] < lens[None, :])  # packed order: by step
    b_idx = order[k_idx]
    rows = b_idx * steps + t_idx if batch_first else t_idx * batch + b_idx
    flat = input.reshape(batch * steps, *input.shape[2:])
    batch_sizes = np.bincount(t_idx, minlength=int(lens[0])).astype(np.int64)
    return PackedSequence(flat.index_select(0, rows), _tensor(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """Undo :func:`pack_padded_sequence`: ``(padded batch, lengths)`` in the caller's batch order."""
    batch_sizes = _as_int_array(sequence.batch_sizes)
    steps = batch_sizes.size
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in input, but got "
                f"total_length={total_length} and max sequence length being {steps}"
            )
        steps = total_length
    batch = int(batch_sizes[0])
    lens_sorted = (batch_sizes[None, :] > np.arange(batch)[:, None]).sum(1)
    column = np.arange(batch)
    if sequence.unsorted_indices is not None:
        column = _as_int_array(sequence.unsorted_indices)  # output column j holds sorted sequence column[j]
    starts = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]])
    t = np.arange(steps)[:, None]
    valid = t < lens_sorted[column][None, :]
    src = np.where(valid, starts[np.minimum(t, batch_sizes.size - 1)] + column[None, :], len(sequence.data))
    if batch_first:
        src = src.T
    data = sequence.data
    pad_row = full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    padded = cat([data, pad_row]).index_select(0, src.reshape(-1)).reshape(*src.shape, *data.shape[1:])
    return padded, _tensor(lens_sorted[column])


def _check_trailing(sequences: Sequence[Tensor]) -> None:
    """torch's copy-size message when a sequence's trailing dims differ from the first's."""
    first = tuple(sequences[0].shape[1:])
    for seq in sequences[1:]:
        rest = tuple(seq.shape[1:])
        if rest == first:
            continue
        for dim, (a, b) in enumerate(zip(first, rest), start=1):
            if a != b:
                raise RuntimeError(
                    f"The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton "
                    f"dimension {dim}"
                )
        raise RuntimeError(f"expected sequences with trailing shape {list(first)}, got {list(rest)}")


def pad_sequence(sequences: Tensor | Iterable[Tensor], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of different lengths ``(L_i, *)`` into ``(T, B, *)`` (or ``(B, T, *)``), padded.

    ``padding_side="left"`` puts the padding before each sequence instead of after it.
    """
    if not isinstance(sequences, Iterable):
        raise RuntimeError(
            f"pad_sequence: Expected iterable for input sequences, but got arg of type: {type(sequences)}"
        )
    seqs = tuple(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    _check_trailing(seqs)
    lens = np.array([s.shape[0] for s in seqs], dtype=np.int64)
    steps, total = int(lens.max()), int(lens.sum())
    starts = np.cumsum(lens) - lens
    t = np.arange(steps)[:, None]
    shift = (steps - lens)[None, :] if padding_side == "left" else 0
    pos = t - shift
    valid = (pos >= 0) & (pos < lens[None, :])
    src = np.where(valid, starts[None, :] + pos, total)
    if batch_first:
        src = src.T
    data = cat(seqs)
    pad_row = full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    return cat([data, pad_row]).index_select(0, src.reshape(-1)).reshape(*src.shape, *data.shape[1:])


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor | Sequence[int],
                   batch_first: bool = False) -> list[Tensor]:
    """Split a padded batch back into its sequences, each ``(length, *)``."""
    lens = _as_int_array(lengths)
    if batch_first:
        return [padded_sequences[b, :length] for b, length in enumerate(lens.tolist())]
    return [padded_sequences[:length, b] for b, length in enumerate(lens.tolist())]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences ``(L_i, *)``: :func:`pad_sequence` then :func:`pack_padded_sequence`."""
    lengths = [s.size(0) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a :class:`PackedSequence` holds, in the caller's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
