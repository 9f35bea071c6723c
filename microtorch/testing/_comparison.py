"""``torch.testing.assert_close`` (and the deprecated ``assert_allclose``).

The inputs are walked like PyTorch walks them: sequences and mappings are opened up, every leaf
pair is handed to the first "pair" kind that takes it (None, booleans, Python/NumPy numbers,
tensor-likes), and the first failure is raised with PyTorch's message. Setup errors found while
walking (length or key mismatch, a lone ``rtol``, inputs no pair takes) are raised as they are,
without ``msg``, since PyTorch raises them before comparing anything.
"""

from __future__ import annotations

import cmath
import collections.abc
import contextlib
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .._tensor import Tensor
from .._type_promotion import promote_types
from ..ops import as_tensor, isclose, tensor

__all__ = ["assert_close", "assert_allclose"]

Message = str | Callable[[str], str] | None

# PyTorch's default (rtol, atol) by dtype name; every other dtype compares exactly.
_TOLERANCES = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7), "complex32": (1e-3, 1e-5), "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}
# A Python number takes the tolerances of the dtype PyTorch maps its type to.
_NUMBER_DTYPES = {int: "int64", float: "float64", complex: "complex128"}
# The layouts PyTorch's comparison accepts, and the index accessors of the compressed ones.
_LAYOUTS = {"strided", "jagged", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
            "sparse_bsc"}
_COMPRESSED = {"sparse_csr": ("CSR", "crow_indices", "col_indices"),
               "sparse_csc": ("CSC", "ccol_indices", "row_indices"),
               "sparse_bsr": ("BSR", "crow_indices", "col_indices"),
               "sparse_bsc": ("BSC", "ccol_indices", "row_indices")}
_BUG_NOTE = ("If you are a user and see this message during normal operation please file an "
             "issue at https://github.com/pytorch/pytorch/issues. If you are a developer and "
             "working on the comparison functions, please except the previous error and raise "
             "an expressive `ErrorMeta` instead.")


class _Failure(Exception):
    """A failed check: the exception type and text to raise, and the item path where it failed."""

    def __init__(self, kind: type[Exception], text: str, where: tuple = ()) -> None:
        super().__init__(text)
        self.kind, self.text, self.where = kind, text, where

    def error(self, msg: Message = None) -> Exception:
        """The user-facing exception; a string ``msg`` replaces the text, a callable edits it."""
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.text
        if self.where:
            text += f"\n\nThe failure occurred for item {_item_path(self.where)}"
        return self.kind(msg(text) if callable(msg) else text)


class _Unsupported(Exception):
    """This pair kind does not take these inputs: try the next one."""


def _item_path(where: tuple) -> str:
    return "".join(str([key]) for key in where)


def _tolerances(dtype_names: list[str], rtol, atol, where: tuple) -> tuple[float, float]:
    """The user's tolerances, or the loosest defaults of the dtypes involved."""
    if (rtol is None) != (atol is None):
        # One tolerance alone is refused: atol=0 would silently still allow rtol's slack.
        missing = "rtol" if rtol is None else "atol"
        raise _Failure(ValueError, "Both 'rtol' and 'atol' must be either specified or "
                                   f"omitted, but got no {missing}.", where)
    if rtol is not None:
        return rtol, atol
    rtols, atols = zip(*(_TOLERANCES.get(name, (0.0, 0.0)) for name in dtype_names))
    return max(rtols), max(atols)


# ------------------------------------------------------------------------------ messages


def _mismatch_text(identifier: str | None, default: str, extra: str,
                   abs_diff, rel_diff, rtol, atol, abs_idx=None, rel_idx=None) -> str:
    """PyTorch's "<what> are not close!" text with the greatest differences."""
    equality = rtol == 0 and atol == 0
    if identifier is None:
        identifier = default

    def line(kind: str, diff, idx, tol) -> str:
        text = (f"{kind.title()} difference: {diff}" if idx is None
                else f"Greatest {kind} difference: {diff} at index {idx}")
        return text if equality else f"{text} (up to {tol} allowed)"

    return (f"{identifier} are not {'equal' if equality else 'close'}!\n\n{extra.strip()}\n"
            f"{line('absolute', abs_diff, abs_idx, atol)}\n"
            f"{line('relative', rel_diff, rel_idx, rtol)}")


def _scalar_text(actual, expected, rtol, atol, identifier=None) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_text(identifier, "Scalars", f"Expected {expected} but got {actual}.",
                          abs_diff, rel_diff, rtol, atol)


def _tensor_text(actual: Tensor, expected: Tensor, matches: Tensor, rtol, atol,
                 identifier=None) -> str:
    """Mismatch count and the greatest differences among the mismatched elements."""
    total = matches.numel()
    mismatched = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    shape = tuple(matches.shape)
    actual, expected, matches = actual.flatten(), expected.flatten(), matches.flatten()
    if not (actual.dtype.is_floating_point or actual.dtype.is_complex):
        # Integer differences can overflow their dtype (uint8 1 - 200), so widen first.
        actual, expected = actual.long(), expected.long()
    abs_diff = (actual - expected).abs()
    abs_diff[matches] = 0  # only the mismatches may be the greatest difference
    max_abs, abs_at = abs_diff.max(0)
    rel_diff = abs_diff / expected.abs()
    rel_diff[matches] = 0
    max_rel, rel_at = rel_diff.max(0)

    def index(flat: Tensor) -> tuple[int, ...]:
        return tuple(int(i) for i in np.unravel_index(int(flat), shape))

    return _mismatch_text(identifier, "Tensor-likes", extra, max_abs.item(), max_rel.item(),
                          rtol, atol, index(abs_at), index(rel_at))


# --------------------------------------------------------------------------------- pairs
# Each pair kind takes (actual, expected, where, options), raises _Unsupported when the inputs
# are not its kind, and otherwise returns the comparison to run later. Errors in the setup
# (tolerances, layouts) are raised right away, as _Failure.


def _none_pair(actual, expected, where: tuple, **_options) -> Callable[[], None]:
    if actual is not None and expected is not None:
        raise _Unsupported

    def compare() -> None:
        if not (actual is None and expected is None):
            raise _Failure(AssertionError, f"None mismatch: {actual} is not {expected}", where)

    return compare


def _bool_pair(actual, expected, where: tuple, **_options) -> Callable[[], None]:
    if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
        raise _Unsupported
    actual, expected = bool(actual), bool(expected)

    def compare() -> None:
        if actual is not expected:
            raise _Failure(AssertionError, f"Booleans mismatch: {actual} is not {expected}",
                           where)

    return compare


def _number_pair(actual, expected, where: tuple, *, rtol, atol, equal_nan: bool,
                 check_dtype: bool, **_options) -> Callable[[], None]:
    if not all(isinstance(x, (int, float, complex, np.number)) for x in (actual, expected)):
        raise _Unsupported
    actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
    # A Python bool gets here against a number and has no dtype entry: PyTorch fails with a
    # KeyError, which the caller turns into its "unexpected exception" RuntimeError.
    names = [_NUMBER_DTYPES[type(x)] for x in (actual, expected)]
    rtol, atol = _tolerances(names, rtol, atol, where)

    def compare() -> None:
        if check_dtype and type(actual) is not type(expected):
            raise _Failure(AssertionError, "The (d)types do not match: "
                                           f"{type(actual)} != {type(expected)}.", where)
        if actual == expected or (equal_nan and cmath.isnan(actual) and cmath.isnan(expected)):
            return
        diff = abs(actual - expected)
        if cmath.isfinite(diff) and diff <= atol + rtol * abs(expected):
            return
        raise _Failure(AssertionError, _scalar_text(actual, expected, rtol, atol), where)

    return compare


def _tensor_pair(actual, expected, where: tuple, *, allow_subclasses: bool, rtol, atol,
                 **options) -> Callable[[], None]:
    # Besides Python numbers, only directly related types compare (a tensor to a tensor, an
    # ndarray to an ndarray), never an ndarray to a tensor.
    if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
        raise _Unsupported
    if not allow_subclasses and type(actual) is not type(expected):
        raise _Unsupported
    actual, expected = _as_tensor(actual), _as_tensor(expected)
    for t in (actual, expected):
        if t.layout.name not in _LAYOUTS:
            raise _Failure(ValueError, f"Unsupported tensor layout {t.layout}", where)
    rtol, atol = _tolerances([actual.dtype.name, expected.dtype.name], rtol, atol, where)
    return lambda: _TensorComparison(where, rtol, atol, **options).run(actual, expected)


def _as_tensor(x) -> Tensor:
    if isinstance(x, Tensor):
        return x
    try:
        return as_tensor(x)
    except Exception:
        raise _Unsupported from None


_PAIRS = (("NonePair", _none_pair), ("BooleanPair", _bool_pair), ("NumberPair", _number_pair),
          ("TensorLikePair", _tensor_pair))


class _TensorComparison:
    """Attribute checks, then the values: strided values elementwise, sparse ones by their
    index tensors (equal) and value tensors (close), as PyTorch does."""

    def __init__(self, where: tuple, rtol, atol, *, equal_nan: bool, check_device: bool,
                 check_dtype: bool, check_layout: bool, check_stride: bool) -> None:
        self.where, self.rtol, self.atol, self.equal_nan = where, rtol, atol, equal_nan
        self.check_device, self.check_dtype = check_device, check_dtype
        self.check_layout, self.check_stride = check_layout, check_stride

    def fail(self, text: str) -> None:
        raise _Failure(AssertionError, text, self.where)

    def run(self, actual: Tensor, expected: Tensor) -> None:
        self.check_attributes(actual, expected)
        actual, expected = _equalize(actual, expected)
        layout = actual.layout.name
        if layout == "sparse_coo":
            self.compare_coo(actual, expected)
        elif layout in _COMPRESSED:
            self.compare_compressed(actual, expected, *_COMPRESSED[layout])
        else:
            if layout == "jagged":
                actual, expected = actual.values(), expected.values()
            self.close(actual, expected, self.rtol, self.atol, self.equal_nan)

    def check_attributes(self, actual: Tensor, expected: Tensor) -> None:
        def differ(attribute: str, a, e) -> None:
            self.fail(f"The values for attribute '{attribute}' do not match: {a} != {e}.")

        if actual.shape != expected.shape:  # no broadcasting
            differ("shape", actual.shape, expected.shape)
        quantized = [getattr(t, "is_quantized", False) for t in (actual, expected)]
        if quantized[0] != quantized[1]:
            differ("is_quantized", *quantized)
        if actual.layout != expected.layout:
            if self.check_layout:
                differ("layout", actual.layout, expected.layout)
        elif (actual.layout.name == "strided" and self.check_stride
              and actual.stride() != expected.stride()):
            differ("stride()", actual.stride(), expected.stride())
        if self.check_device and actual.device != expected.device:
            differ("device", actual.device, expected.device)
        if self.check_dtype and actual.dtype != expected.dtype:
            differ("dtype", actual.dtype, expected.dtype)

    def compare_coo(self, actual: Tensor, expected: Tensor) -> None:
        # Compared as stored, not coalesced: the same values in another order fail, as in torch.
        if actual.sparse_dim() != expected.sparse_dim():
            self.fail("The number of sparse dimensions in sparse COO tensors does not match: "
                      f"{actual.sparse_dim()} != {expected.sparse_dim()}")
        if actual._nnz() != expected._nnz():
            self.fail("The number of specified values in sparse COO tensors does not match: "
                      f"{actual._nnz()} != {expected._nnz()}")
        self.close(actual._indices(), expected._indices(), 0, 0, False, "Sparse COO indices")
        self.close(actual._values(), expected._values(), self.rtol, self.atol, self.equal_nan,
                   "Sparse COO values")

    def compare_compressed(self, actual: Tensor, expected: Tensor, name: str,
                           compressed: str, plain: str) -> None:
        if actual._nnz() != expected._nnz():
            self.fail(f"The number of specified values in sparse {name} tensors does not match: "
                      f"{actual._nnz()} != {expected._nnz()}")
        # Either tensor may index with int32 or int64: compare in the common dtype.
        a_idx, e_idx = getattr(actual, compressed)(), getattr(expected, compressed)()
        dtype = promote_types(a_idx.dtype, e_idx.dtype)
        self.close(a_idx.to(dtype), e_idx.to(dtype), 0, 0, False,
                   f"Sparse {name} {compressed}")
        self.close(getattr(actual, plain)().to(dtype), getattr(expected, plain)().to(dtype),
                   0, 0, False, f"Sparse {name} {plain}")
        self.close(actual.values(), expected.values(), self.rtol, self.atol, self.equal_nan,
                   f"Sparse {name} values")

    def close(self, actual: Tensor, expected: Tensor, rtol, atol, equal_nan: bool,
              identifier: str | None = None) -> None:
        matches = isclose(actual, expected, rtol, atol, equal_nan)
        if bool(matches.all()):
            return
        if actual.dim() == 0:
            self.fail(_scalar_text(actual.item(), expected.item(), rtol, atol, identifier))
        self.fail(_tensor_text(actual, expected, matches, rtol, atol, identifier))


def _equalize(actual: Tensor, expected: Tensor) -> tuple[Tensor, Tensor]:
    """What the unchecked attributes may differ in: device (both to the CPU), dtype (both to
    the promoted one) and layout (both dense)."""
    if actual.device != expected.device:
        actual, expected = actual.cpu(), expected.cpu()
    if actual.dtype != expected.dtype:
        dtype = promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(dtype), expected.to(dtype)
    if actual.layout != expected.layout:
        actual, expected = (t if t.layout.name == "strided" else t.to_dense()
                            for t in (actual, expected))
    return actual, expected


# ----------------------------------------------------------------------------- the walk


def _is_sequence(x) -> bool:
    # Strings are excluded: "a"[0] is "a" again, an endless recursion.
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)


def _originate(actual, expected, where: tuple, options: dict) -> list[Callable[[], None]]:
    """The comparisons for every leaf pair of (possibly nested) inputs, in PyTorch's order."""
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, "The length of the sequences mismatch: "
                                           f"{len(actual)} != {len(expected)}", where)
        return [c for i in range(len(actual))
                for c in _originate(actual[i], expected[i], (*where, i), options)]
    mapping = collections.abc.Mapping
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        keys, expected_keys = set(actual.keys()), set(expected.keys())
        if keys != expected_keys:
            raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                           f"Missing keys in the actual mapping: {sorted(expected_keys - keys)}\n"
                           f"Additional keys in the actual mapping: {sorted(keys - expected_keys)}",
                           where)
        with contextlib.suppress(Exception):  # sorted when the keys allow it, for determinism
            keys = sorted(keys)
        return [c for key in keys
                for c in _originate(actual[key], expected[key], (*where, key), options)]
    for name, pair in _PAIRS:
        try:
            return [pair(actual, expected, where, **options)]
        except _Unsupported:
            continue
        except _Failure:
            raise
        except Exception as error:
            raise RuntimeError(
                f"Originating a {name}() at item {_item_path(where)} with\n\n"
                f"{type(actual).__name__}(): {actual}\n\nand\n\n"
                f"{type(expected).__name__}(): {expected}\n\n"
                f"resulted in the unexpected exception above. {_BUG_NOTE}") from error
    raise _Failure(TypeError, "No comparison pair was able to handle inputs of type "
                              f"{type(actual)} and {type(expected)}.", where)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, msg: Message = None) -> None:
    """Assert that ``actual`` and ``expected`` are close: ``|a - e| <= atol + rtol * |e|``
    elementwise, with the same shape and (unless disabled) device, dtype, layout and stride.

    Inputs may be tensors, NumPy arrays, Python/NumPy numbers, ``None`` and nested sequences or
    mappings of them. Omitted tolerances default per dtype (PyTorch's table). ``msg`` replaces
    the failure message (a string) or edits it (a callable taking the generated message).
    """
    __tracebackhide__ = True  # hide this frame from pytest's tracebacks
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype,
                   check_layout=check_layout, check_stride=check_stride)
    try:
        comparisons = _originate(actual, expected, (), options)
    except _Failure as failure:
        raise failure.error() from None  # setup errors ignore msg, as in PyTorch
    for compare in comparisons:
        try:
            compare()
        except _Failure as failure:
            raise failure.error(msg) from None


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None,
                    atol: float | None = None, equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated since PyTorch 1.12 (still shipped): ``assert_close`` with looser default
    tolerances, ``equal_nan=True`` and no dtype check; ``expected`` takes ``actual``'s dtype."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        defaults = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}
        rtols, atols = zip(*(defaults.get(t.dtype.name, (0.0, 0.0)) for t in (actual, expected)))
        rtol, atol = max(rtols), max(atols)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)
