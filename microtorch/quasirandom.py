"""Quasi-random sequences: ``microtorch.quasirandom.SobolEngine``, PyTorch's Sobol engine.

The points are bit-for-bit PyTorch's, unscrambled and scrambled:

* Direction numbers: Joe & Kuo's table (search criterion D(6), 21201 dimensions), the one
  PyTorch compiles in. SciPy ships the very same numbers (``scipy/stats/
  _sobol_direction_numbers.npz``: the primitive polynomials ``poly`` and the initial direction
  numbers ``vinit``), so they are read from there on first use rather than kept in this file.
  The file is found without importing ``scipy.stats`` (which takes about a second).
* Points: the state ``quasi`` holds point k as 30-bit integers per dimension; the next point is
  ``quasi ^ v[:, rightmost_zero(k)]`` (Antonov-Saleev's Gray-code order). A draw gathers the
  needed columns and runs one cumulative XOR down the rows; a fast-forward XORs in the columns
  of ``gray(k) ^ gray(k + n)`` (the steps telescope), so skipping 2**20 points costs 30 XORs.
* Scrambling (Owen's linear matrix scrambling plus a digital shift): the shift bits and the
  lower-triangular 0/1 matrices come from ``randint(2, ...)`` on a ``Generator`` seeded with
  ``seed`` (on the default generator when ``seed`` is None), which replays PyTorch's stream.
* Values: ``float(quasi) * 2**-30`` in the requested dtype; the first point, as PyTorch's, is
  divided in the default dtype of the time the engine was built and only then converted.

As PyTorch's, the engine keeps its state on the CPU and returns CPU tensors.
"""

from __future__ import annotations

import importlib.util
import os
import warnings

import numpy as np

from . import _dtype
from ._tensor import Tensor
from .backend.rng import Generator
from .ops.creation import from_numpy, randint

__all__ = ["SobolEngine"]

_MAXBIT = 30
_MAXDIM = 21201
_CPU = "cpu"

_directions: np.ndarray | None = None  # (21201, 30) int64, built on first use


def _table_path() -> str:
    """Where SciPy keeps Joe & Kuo's direction numbers (found without importing scipy)."""
    spec = importlib.util.find_spec("scipy")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("SobolEngine needs SciPy for its direction numbers (pip install scipy)")
    return os.path.join(spec.submodule_search_locations[0], "stats",
                        "_sobol_direction_numbers.npz")


def _bit_length(x: np.ndarray) -> np.ndarray:
    """``int.bit_length`` of non-negative int64s below 2**53, elementwise."""
    # frexp's exponent e gives 2**(e-1) <= x < 2**e for x > 0, and e = 0 for x = 0
    return np.frexp(x.astype(np.float64))[1].astype(np.int64)


def _build_directions(poly: np.ndarray, vinit: np.ndarray) -> np.ndarray:
    """The (dims, 30) direction numbers, column j scaled by 2**(29 - j).

    Dimension d's primitive polynomial ``poly[d]`` of degree s gives the recurrence (Bratley &
    Fox, Algorithm 659) m_j = m_{j-s} ^ XOR_{k=1..s} a_k * (m_{j-k} << k) for the odd integers
    m_j, a_k being bit s-k of ``poly[d]`` (a_s = 1); the first s of them are ``vinit[d]``. All
    dimensions advance together, one j at a time, each with its own degree; dimension 0 is the
    van der Corput sequence (all ones).
    """
    dims = len(poly)
    degree = _bit_length(poly) - 1
    cols = np.arange(vinit.shape[1])
    m = np.zeros((dims, _MAXBIT), np.int64)
    m[:, :vinit.shape[1]] = np.where(cols < degree[:, None], vinit, 0)
    rows = np.arange(dims)
    for j in range(1, _MAXBIT):
        grow = (j >= degree) & (rows > 0)
        newv = m[rows, np.clip(j - degree, 0, None)]
        for k in range(min(j, int(degree.max()))):
            # bit (s-1-k) of poly is the coefficient of m_{j-k-1}, weighted by 2**(k+1)
            coeff = (poly >> np.clip(degree - 1 - k, 0, None)) & 1
            use = grow & (k < degree) & (coeff == 1)
            newv ^= np.where(use, m[:, j - k - 1] << (k + 1), 0)
        m[:, j] = np.where(grow, newv, m[:, j])
    m[0] = 1
    return m << (_MAXBIT - 1 - np.arange(_MAXBIT))


def _direction_numbers(dimension: int) -> np.ndarray:
    """A fresh (dimension, 30) int64 copy of the unscrambled direction numbers."""
    global _directions
    if _directions is None:
        with np.load(_table_path()) as table:
            _directions = _build_directions(table["poly"].astype(np.int64),
                                            table["vinit"].astype(np.int64))
    return _directions[:dimension].copy()


def _rightmost_zero(k: np.ndarray) -> np.ndarray:
    """Index of the lowest 0 bit of each counter (PyTorch's loop gives 0 for negatives)."""
    low = (k + 1) & -(k + 1)  # the lowest 1 bit of k + 1 is the lowest 0 bit of k
    return np.where(k < 0, 0, _bit_length(np.maximum(low, 1)) - 1)


def _gray_xor(v: np.ndarray, code: int) -> np.ndarray:
    """XOR of the columns of ``v`` selected by the bits of ``code``."""
    picked = [b for b in range(_MAXBIT) if (code >> b) & 1]
    if not picked:
        return np.zeros(v.shape[0], np.int64)
    return np.bitwise_xor.reduce(v[:, picked], axis=1)


def _check_range(counter: int, n: int) -> None:
    """PyTorch reads past its 30 columns from the 2**30-th point on; refuse instead."""
    if n > 0 and counter + n > (1 << _MAXBIT) - 1:
        raise RuntimeError(f"SobolEngine supports at most 2**{_MAXBIT} points per sequence "
                           f"(its direction numbers have {_MAXBIT} bits)")


def _advance(quasi: np.ndarray, v: np.ndarray, counter: int, n: int) -> np.ndarray:
    """``quasi`` after the steps ``counter .. counter + n - 1``, without the points between."""
    quasi = quasi.copy()
    if n <= 0:
        return quasi
    _check_range(counter, n)
    if counter < 0:  # (after a negative fast_forward) each negative counter XORs in column 0
        negatives = min(-counter, n)
        if negatives % 2:
            quasi ^= v[:, 0]
        counter, n = counter + negatives, n - negatives
    end = counter + n
    # the steps from point k to point end XOR in exactly the columns where gray(k), gray(end)
    # differ
    return quasi ^ _gray_xor(v, (counter ^ (counter >> 1)) ^ (end ^ (end >> 1)))


_BLOCK = 2048  # rows per pass: the int64 scratch of a long draw stays small and warm


def _fill_points(out: np.ndarray, quasi: np.ndarray, v: np.ndarray, counter: int) -> np.ndarray:
    """Write the next ``len(out)`` points, from step ``counter`` on, into the float array
    ``out`` (scaled by 2**-30); returns the last point's integers (``quasi`` when none)."""
    n = len(out)
    _check_range(counter, n)
    columns = np.ascontiguousarray(v.T)  # row l: every dimension's direction number l
    scale = out.dtype.type(2.0 ** -_MAXBIT)
    last = quasi.copy()
    for start in range(0, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        steps = columns[_rightmost_zero(np.arange(counter + start, counter + stop))]
        steps[0] ^= last  # carry the point before the block into the running XOR
        np.bitwise_xor.accumulate(steps, axis=0, out=steps)
        last = steps[-1].copy()
        block = out[start:stop]
        block[...] = steps  # int64 -> float rounds to nearest even, as C++'s conversion
        block *= scale  # a power of two: exact
    return last


def _scale(ints: np.ndarray, dt: _dtype.dtype) -> np.ndarray:
    """``ints / 2**30`` in ``dt`` (PyTorch converts the integers to ``dt`` first)."""
    if dt.np not in _dtype.REDUCED_FLOATS:
        return ints.astype(dt.np) * dt.np.type(2.0 ** -_MAXBIT)  # a power of two: exact
    # c10 converts integers to 16-bit floats through float32 (float16 overflows to inf, as
    # torch's), and divides in float32 before rounding back (2**-30 is no float16)
    with warnings.catch_warnings(), np.errstate(over="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        vals = ints.astype(np.float32).astype(dt.np).astype(np.float32)
    return (vals * np.float32(2.0 ** -_MAXBIT)).astype(dt.np)


def _scramble_directions(v: np.ndarray, ltm: np.ndarray) -> np.ndarray:
    """Left-multiply each dimension's direction bits by its lower-triangular matrix over GF(2).

    Row p of ``ltm[d]`` (diagonal forced to 1) produces bit 29 - p of every scrambled direction
    number from the bits 29 - c, c <= p: ``bits_new = L @ bits (mod 2)`` with the bits of each
    number listed most significant first. The sums are at most 30, exact in float32.
    """
    mat = np.tril(ltm).astype(np.float32)
    diag = np.arange(_MAXBIT)
    mat[:, diag, diag] = 1.0
    shifts = _MAXBIT - 1 - diag  # bit position of row/column c, most significant first
    bits = ((v[:, None, :] >> shifts[None, :, None]) & 1).astype(np.float32)  # (d, c, j)
    new_bits = np.matmul(mat, bits).astype(np.int64) & 1  # (d, p, j)
    return np.bitwise_or.reduce(new_bits << shifts[None, :, None], axis=1)


class SobolEngine:
    """Draws (optionally scrambled) Sobol' sequences, as ``torch.quasirandom.SobolEngine``.

    Args:
        dimension: the number of coordinates of each point, 1 to 21201.
        scramble: scramble the sequence (Owen's linear scrambling with a random digital shift).
        seed: the seed of the scrambling's generator; None draws from the default generator.

    Attributes: ``sobolstate`` (the (dimension, 30) int64 direction numbers, scrambled when
    ``scramble``), ``shift`` and ``quasi`` (the digital shift and the current point as 30-bit
    integers), ``num_generated`` (the number of points drawn or skipped so far).
    """

    MAXBIT = _MAXBIT
    MAXDIM = _MAXDIM

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None) -> None:
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is "
                             f"[1, {self.MAXDIM}]")
        if not isinstance(dimension, (int, np.integer)) or isinstance(dimension, bool):
            # PyTorch fails here in torch.zeros(dimension, MAXBIT) with this message
            raise TypeError("zeros() takes 1 positional argument but 2 were given")
        self.seed = seed
        self.scramble = scramble
        self.dimension = int(dimension)

        directions = _direction_numbers(self.dimension)
        if self.scramble:
            shift, directions = self._scrambled(directions)
        else:
            shift = np.zeros(self.dimension, np.int64)
        self.sobolstate: Tensor = from_numpy(directions)
        self.shift: Tensor = from_numpy(shift)
        self.quasi: Tensor = from_numpy(shift.copy())
        # PyTorch divides the shift in the default dtype of construction time, once
        first = _scale(shift, _dtype.get_default_dtype()).reshape(1, -1)
        self._first_point: Tensor = from_numpy(first)
        self.num_generated = 0

    def _scrambled(self, directions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(shift, scrambled directions) from the seeded generator, in PyTorch's draw order."""
        gen = None
        if self.seed is not None:
            gen = Generator()
            gen.manual_seed(self.seed)
        shift_bits = randint(2, (self.dimension, _MAXBIT), generator=gen, device=_CPU).numpy()
        shift = (shift_bits << np.arange(_MAXBIT)).sum(axis=1)
        ltm = randint(2, (self.dimension, _MAXBIT, _MAXBIT), generator=gen,
                      device=_CPU).numpy()
        return shift, _scramble_directions(directions, ltm)

    def _kernel_points(self, n: int, counter: int, dt: _dtype.dtype,
                       first: Tensor | None = None) -> np.ndarray:
        """PyTorch's ``_sobol_engine_draw``: n points after step ``counter``, below ``first``
        (the first point, for a first draw) when given; updates ``quasi``."""
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: "
                               f"[{n}, {self.dimension}]")
        if dt not in (_dtype.float32, _dtype.float64):
            raise NotImplementedError(f'"_sobol_engine_draw" not implemented for '
                                      f"'{_dtype.title(dt)}'")
        lead = 0 if first is None else 1
        result = np.empty((lead + n, self.dimension), dt.np)
        if first is not None:
            result[0] = first.numpy()[0]
        last = _fill_points(result[lead:], self.quasi.numpy(), self.sobolstate.numpy(), counter)
        self.quasi = from_numpy(last)
        return result

    def draw(self, n: int = 1, out: Tensor | None = None, dtype=None) -> Tensor:
        """The next ``n`` points of the sequence, as an (n, dimension) tensor.

        Args:
            n: how many points to draw (each draw continues where the last one stopped).
            out: a tensor to resize and copy the points into (it keeps its own dtype).
            dtype: the dtype of the points; the default dtype when None.
        """
        dt = _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)
        if self.num_generated == 0:
            first = self._first_point.to(dt)
            if n == 1:
                result = first.clone() if first is self._first_point else first
            else:
                result = from_numpy(self._kernel_points(n - 1, 0, dt, first))
        else:
            result = from_numpy(self._kernel_points(n, self.num_generated - 1, dt))
        self.num_generated += n
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m: int, out: Tensor | None = None, dtype=None) -> Tensor:
        """The next ``2**m`` points; the total drawn must stay a power of 2 (Sobol' points
        are balanced only in such blocks). Arguments as ``draw``."""
        n = 2 ** m
        total = self.num_generated + n
        if total & (total - 1) != 0:
            raise ValueError(
                f"The balance properties of Sobol' points require n to be a power of 2. "
                f"{self.num_generated} points have been previously generated, then: "
                f"n={self.num_generated}+2**{m}={total}. If you still want to do this, "
                f"please use 'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self) -> SobolEngine:
        """Go back to the first point of the sequence (the scrambling is kept)."""
        self.quasi.copy_(self.shift)
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> SobolEngine:
        """Skip ``n`` points, as if drawn and thrown away."""
        if self.num_generated == 0:
            steps, counter = n - 1, 0  # the first point needs no step
        else:
            steps, counter = n, self.num_generated - 1
        quasi = self.quasi.numpy()  # in place, as PyTorch's _sobol_engine_ff_
        quasi[...] = _advance(quasi, self.sobolstate.numpy(), counter, steps)
        self.num_generated += n
        return self

    def __repr__(self) -> str:
        parts = [f"dimension={self.dimension}"]
        if self.scramble:
            parts.append("scramble=True")
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        return f"{type(self).__name__}({', '.join(parts)})"
