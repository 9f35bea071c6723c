"""Helpers of the sparse tests: the same sparse tensor in microtorch and PyTorch, and
comparisons of layouts, indices, values and flags (issue 24)."""

from __future__ import annotations

import numpy as np

import microtorch as mt

FILTERS = ["ignore:Sparse invariant checks are implicitly disabled:UserWarning",
           "ignore:Sparse CSR tensor support is in beta state:UserWarning"]


def host(t) -> np.ndarray:
    """A dense tensor's values on the host (either framework)."""
    t = t.detach()
    return t.cpu().numpy() if hasattr(t, "cpu") else np.asarray(t)


def coo_pair(torch, indices, values, size=None, device="cpu", dtype="float32", **kwargs):
    """The same COO tensor in both frameworks (``values`` given as a NumPy-convertible)."""
    values = np.asarray(values, dtype=dtype)
    size = () if size is None else (size,)
    ours = mt.sparse_coo_tensor(mt.tensor(np.asarray(indices), device=device),
                                mt.tensor(values, device=device), *size, **kwargs)
    theirs = torch.sparse_coo_tensor(torch.tensor(np.asarray(indices)),
                                     torch.tensor(values), *size, **kwargs)
    return ours, theirs


def same_sparse(ours, theirs, exact: bool = True, rtol: float = 0.0, flags: bool = True,
                atol: float | None = None) -> None:
    """The same layout, shape, dtype, entries (indices in the same order) and, when
    ``flags``, the same coalesced flag; values bit-exact unless ``exact`` is False."""
    assert str(ours.layout).split(".")[-1] == str(theirs.layout).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).split(".")[-1]
    if theirs.layout.__repr__().endswith("sparse_coo"):
        assert ours._nnz() == theirs._nnz()
        if flags:
            assert ours.is_coalesced() == theirs.is_coalesced()
        np.testing.assert_array_equal(host(ours._indices()), host(theirs._indices()))
        pairs = [(ours._values(), theirs._values())]
    elif theirs.layout.__repr__().endswith("sparse_csr"):
        np.testing.assert_array_equal(host(ours.crow_indices()), host(theirs.crow_indices()))
        np.testing.assert_array_equal(host(ours.col_indices()), host(theirs.col_indices()))
        pairs = [(ours.values(), theirs.values())]
    else:
        pairs = [(ours, theirs)]
    for a, b in pairs:
        if exact:
            np.testing.assert_array_equal(host(a), host(b))
        else:
            np.testing.assert_allclose(host(a), host(b), rtol=rtol,
                                       atol=rtol if atol is None else atol)


def dense_of(t) -> np.ndarray:
    """The dense values of a tensor of any layout (either framework)."""
    return host(t.to_dense()) if str(t.layout).split(".")[-1] != "strided" else host(t)


def same_repr(ours, theirs) -> None:
    """``repr`` equal to PyTorch's, microtorch's names read as torch's."""
    assert repr(ours).replace("microtorch.", "torch.") == repr(theirs)
