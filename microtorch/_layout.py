"""Layouts (``microtorch.strided``, ``sparse_coo``, ``sparse_csr``, ...), as PyTorch's
``torch.layout`` objects, and the registry of the data objects sparse tensors hold.

A tensor's layout is read off its ``_data``: an array for ``strided``, one of the sparse data
objects of ``microtorch.ops.sparse_layout`` otherwise (their classes are listed in
``SPARSE_DATA``, which the autograd engine and ``Node.apply`` consult on their slow paths).
"""

from __future__ import annotations


class layout:  # noqa: N801 - mirrors torch.layout
    """A tensor's memory layout (``microtorch.strided``, ``microtorch.sparse_coo``, ...)."""

    __module__ = "microtorch"
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"microtorch.{self.name}"

    __str__ = __repr__

    def __reduce__(self):
        return self.name  # pickled by reference, as torch pickles ``torch.sparse_coo``


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
_mkldnn = layout("_mkldnn")

ALL = (strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc)

# The classes of the objects a sparse tensor keeps in ``_data`` (filled in by
# ``microtorch.ops.sparse_layout`` when it is imported).
SPARSE_DATA: set = set()


# PyTorch's answers to dense-only Tensor methods on sparse tensors: [the function], registered
# by ``microtorch.ops.sparse_tensor`` (the layers above are not imported from here).
DENSE_ONLY: list = [None]


def dense_only(t, what: str, *args):
    """PyTorch's answer when a dense-only Tensor method (``numpy``, ``nbytes``, ``stride``,
    ``is_contiguous`` ...) is called on a sparse tensor; None for a dense one."""
    if type(t._data) in SPARSE_DATA:
        return DENSE_ONLY[0](t, what, *args)
    return None


class SparseAccessError(NotImplementedError, AttributeError):
    """A dense operation reached a sparse tensor's data. A NotImplementedError (PyTorch's
    class for an op without a sparse kernel) and, so that ``hasattr`` probes of generic code
    answer False, an AttributeError."""
