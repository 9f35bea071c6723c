"""``microtorch.Size``: the shape of a tensor, as ``torch.Size``."""

from __future__ import annotations


class Size(tuple):
    """The shape of a tensor: a tuple that prints like PyTorch's ``torch.Size``; slices,
    ``+`` and ``*`` give Sizes again, and only integers are accepted."""

    __module__ = "microtorch"

    def __new__(cls, sizes=()):
        values = []
        for i, v in enumerate(sizes):
            if isinstance(v, bool) or not hasattr(v, "__index__"):
                raise TypeError(f"Size() takes an iterable of 'int' (item {i} is "
                                f"'{type(v).__name__}')")
            values.append(v.__index__())
        return tuple.__new__(cls, values)

    def __repr__(self) -> str:
        return f"microtorch.Size({list(self)})"

    def __getitem__(self, key):
        out = tuple.__getitem__(self, key)
        return tuple.__new__(Size, out) if isinstance(key, slice) else out

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return tuple.__new__(Size, tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return tuple.__new__(Size, tuple.__add__(other, self))

    def __mul__(self, n):
        return tuple.__new__(Size, tuple.__mul__(self, n))

    __rmul__ = __mul__

    def numel(self) -> int:
        """The product of the sizes."""
        n = 1
        for s in self:
            n *= s
        return n
