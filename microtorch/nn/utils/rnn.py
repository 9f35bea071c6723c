"""``microtorch.nn.utils.rnn``: padding and packing variable-length sequences (PyTorch's API).

A ``PackedSequence`` holds the steps of a batch of sequences sorted by decreasing length, time
step after time step: ``data`` (sum of lengths, *), ``batch_sizes`` (an int64 CPU tensor, how
many sequences are still running at each step), and the permutation that sorted the batch
(``sorted_indices``) with its inverse (``unsorted_indices``), or ``None`` when it came sorted.
Every conversion is made of differentiable ops (index gathers, ``cat``, ``stack``), so
gradients flow back to the sequences.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..._dtype import float16, float32, float64
from ..._tensor import Tensor
from ...ops.creation import full
from ...ops.creation import tensor as _tensor
from ...ops.shape import cat, stack

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]


class _PackedSequenceBase(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceBase):
    """A packed batch of variable-length sequences (see the module's docstring).

    Build one with ``pack_padded_sequence`` or ``pack_sequence``, not directly.
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PyTorch's form: a (data, batch_sizes) tuple as first argument
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """``data.to(...)``; the indices follow data's device, batch_sizes stays on the CPU."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes,
                          *(None if i is None else i.to(device=data.device)
                            for i in (self.sorted_indices, self.unsorted_indices)))

    def cuda(self, *args, **kwargs) -> PackedSequence:
        return self.to(self.data.cuda(*args, **kwargs).device)

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def double(self) -> PackedSequence:
        return self.to(dtype=float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=float16)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation tensor (``None`` stays ``None``)."""
    if permutation is None:
        return None
    perm = permutation.cpu().numpy()
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size, dtype=perm.dtype)
    return _tensor(inv, device=permutation.device)


def _lengths_list(lengths) -> list[int]:
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.dim()}D {lengths.device} {lengths.dtype} tensor")
        return [int(v) for v in lengths.cpu().numpy().tolist()]
    return [int(v) for v in lengths]


def _sizes_of(lengths: list[int]) -> list[int]:
    """batch_sizes of lengths sorted in decreasing order."""
    arr = np.asarray(lengths)
    return [int((arr > t).sum()) for t in range(lengths[0])]


def _packed_rows(batch_sizes: list[int], n: int) -> np.ndarray:
    """Flat positions (t * n + j) in a time-major (L, n) layout of each packed row, in order."""
    return np.concatenate([t * n + np.arange(b) for t, b in enumerate(batch_sizes)])


def _pack_index(batch_sizes: list[int], n: int, steps: int, count: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """Between ``count`` packed rows and a time-major (steps, n) layout (flat positions
    t * n + j): each packed row's position, and each position's packed row, or ``count`` (a
    padding row appended after the data) where no row lands."""
    rows = _packed_rows(batch_sizes, n)
    src = np.full(steps * n, count, dtype=np.int64)
    src[rows] = np.arange(count)
    return rows, src


def _index(device) -> object:
    return lambda idx: _tensor(np.asarray(idx, dtype=np.int64), device=device)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (L, B, *) ((B, L, *) with ``batch_first``) of sequences with the
    given lengths. ``enforce_sorted=False`` sorts the batch by decreasing length first and
    records the permutation."""
    lens = _lengths_list(lengths)
    to_index = _index(input.device)
    batch = input.shape[0] if batch_first else input.shape[1]
    if len(lens) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lens)} (batch_size={batch})")
    if enforce_sorted:
        sorted_indices = None
    else:
        order = np.argsort(-np.asarray(lens, dtype=np.int64), kind="stable")
        lens = [lens[i] for i in order]
        sorted_indices = to_index(order)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    if lens and lens[-1] <= 0:  # (PyTorch checks the last, then the order)
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if any(a < b for a, b in zip(lens, lens[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                           "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                           "pack_padded_sequence and/or pack_sequence to sidestep this "
                           "requirement if you do not need ONNX exportability.")
    if lens[0] > input.shape[0]:
        raise RuntimeError(f"Expected sequence length to be at most {input.shape[0]}, but "
                           f"got a sequence of length {lens[0]}")  # (never PyTorch's path)
    sizes = _sizes_of(lens)
    rows = _packed_rows(sizes, batch)
    flat = input.reshape(input.shape[0] * batch, *input.shape[2:])
    data = flat[to_index(rows)]
    return PackedSequence(data, _tensor(np.asarray(sizes, dtype=np.int64)), sorted_indices,
                          None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None
                        ) -> tuple[Tensor, Tensor]:
    """Undo ``pack_padded_sequence``: (padded (T, B, *) or (B, T, *), lengths (B,) int64),
    in the original batch order. ``total_length`` pads to that many steps."""
    data = sequence.data
    sizes = _lengths_list(sequence.batch_sizes)
    steps, batch = len(sizes), sizes[0]
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
        steps = total_length
    # Each padded position takes its packed row, or the padding row appended after the data.
    _, src = _pack_index(sizes, batch, steps, data.shape[0])
    pad = full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    rows = cat([data, pad])[_index(data.device)(src)]
    padded = rows.reshape(steps, batch, *data.shape[1:])
    lengths = np.asarray([sum(1 for b in sizes if b > j) for j in range(batch)],
                         dtype=np.int64)
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        unsorted = sequence.unsorted_indices
        padded = padded.index_select(0 if batch_first else 1, unsorted)
        lengths = lengths[unsorted.cpu().numpy()]
    return padded, _tensor(lengths)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack tensors of shapes (L_i, *) into (L_max, B, *) ((B, L_max, *) with
    ``batch_first``), padding with ``padding_value`` on the right (or left)."""
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            pad = (s.new_zeros((missing, *s.shape[1:])) + padding_value)
            if pad.dtype != s.dtype:
                pad = pad.to(s.dtype)
            s = cat([s, pad] if padding_side == "right" else [pad, s])
        rows.append(s)
    return stack(rows, 1 if not batch_first else 0)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False
                   ) -> list[Tensor]:
    """Split a padded batch back into its sequences (views of each one's first steps)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:length] for seq, length in zip(padded_sequences, _lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors (L_i, *) (``pad_sequence`` then ``pack_padded_sequence``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a ``PackedSequence`` holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
