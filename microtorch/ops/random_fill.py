"""Random sampling ops: the in-place fills (``normal_``, ``uniform_``, ``bernoulli_``,
``exponential_``, ``geometric_``, ``log_normal_``, ``cauchy_``, ``random_``) and ``normal``,
``bernoulli``, ``multinomial``, ``poisson``.

Every draw goes through the tensor's backend (or the ``generator=`` given): on the CPU that is
PyTorch's mt19937 stream (``backend/rng.py``), so after the same seed the values equal
PyTorch's bit for bit; on CUDA CuPy's generator, whose stream differs from PyTorch's.
A fill on a tensor in a recorded graph is recorded too, as PyTorch's ``NormalBackward0`` etc.:
the overwritten values get a zero gradient.
"""

from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from .. import _dtype
from .._memory_format import check_layout
from ..autograd import saved
from ..autograd.function import Function
from ..backend import is_array_wrapper
from ._util import Tensor, is_scalar, scalar_name, xp_of

__all__ = ["normal", "bernoulli", "multinomial", "poisson"]

# PyTorch's kernel names in the errors of ``rand``/``randn`` and ``uniform_``/``normal_`` on
# a dtype they cannot fill.
_KERNELS = {"normal": "normal_kernel_cpu", "uniform": "check_uniform_bounds"}

# PyTorch's C names of the integer dtypes, as its bound errors print them.
_C_NAMES = {"uint8": "unsigned char", "int8": "signed char", "int16": "short", "int32": "int",
            "int64": "long int", "bool": "bool", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}


class Sampled(Function):
    """A random result recorded in the graph: the tensors it replaced or was drawn from get
    zero gradients (PyTorch's derivatives of the random ops)."""

    @staticmethod
    def forward(ctx, sample, torch_name, *inputs):
        ctx.torch_name = torch_name
        ctx.shapes = [(i._data.shape, i._data.dtype) if isinstance(i, Tensor) else None
                      for i in inputs]
        return sample

    @staticmethod
    def backward(ctx, grad):
        xp = xp_of(grad._data)
        zeros = [None if m is None else Tensor._make(xp.zeros(*m)) for m in ctx.shapes]
        return (None, None, *zeros)


def _source(t: Tensor, generator):
    """Where the random numbers come from: the generator given, else the tensor's device."""
    if generator is None:
        return t._backend
    if t.is_cuda:
        raise RuntimeError("Expected a 'cuda' device type for generator but found 'cpu'")
    return generator


def _memory_order(self: Tensor) -> tuple[int, ...] | None:
    """The dims of a non-contiguous tensor from the largest stride to the smallest: PyTorch
    draws the values of a fill in that order (its TensorIterator walks memory order), so a
    transposed or sliced tensor gets them as torch gives them. None when C-contiguous."""
    arr = self._data
    if arr.flags.c_contiguous or arr.ndim < 2:
        return None
    strides = arr.strides
    return tuple(sorted(range(arr.ndim), key=lambda d: -abs(strides[d])))


def _draw(self: Tensor, draw) -> np.ndarray:
    """``draw(shape)`` in the tensor's memory order, laid out in its logical shape."""
    order = _memory_order(self)
    if order is None:
        return draw(_shape(self))
    shape = _shape(self)
    sample = draw(tuple(shape[d] for d in order))
    return sample.transpose(np.argsort(order))


def _store(self: Tensor, draw, torch_name: str, in_memory_order: bool = True) -> Tensor:
    """Fill ``self`` in place with ``draw(shape)`` (recorded when ``self`` is in a graph).
    The in-place check comes first: a fill that raises draws nothing, so the generator's
    stream is as it was."""
    from . import _check_inplace, _write

    recorded = _check_inplace(self)
    sample = _draw(self, draw) if in_memory_order else draw(_shape(self))
    if is_array_wrapper(sample) and not is_array_wrapper(self._data):
        raise RuntimeError("vmap: Cannot ask for different inplace randomness on an unbatched "
                           "tensor. This will appear like same randomness. If this is necessary "
                           "for your usage, please file an issue with functorch.")
    arr = self._backend.asarray(sample).astype(self._data.dtype, copy=False)
    if recorded:
        return _write(self, Sampled.apply(arr, torch_name, self))
    if saved.writes.count:
        saved.before_write(self)
    self._data[...] = arr
    self._vbox[0] += 1
    return self


def _shape(self: Tensor) -> tuple:
    return tuple(self._data.shape)


def _float_only(self: Tensor, kernel: str, complex_ok: bool = False) -> None:
    """PyTorch's dtype error for a floating-point kernel (bfloat16 included; complex too
    where ``complex_ok``: ``normal_`` and ``uniform_`` fill a complex tensor's real view)."""
    _fillable(self.dtype, kernel, complex_ok)


def _real_only(self: Tensor, kernel: str) -> None:
    """PyTorch's error for a kernel without complex types (none for an empty tensor: the
    fill returns before it dispatches)."""
    if self.dtype.is_complex and self._data.size:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{scalar_name(self)}'")


def _fillable(dt: _dtype.dtype, kernel: str, complex_ok: bool = False) -> None:
    if not (dt.is_floating_point or complex_ok and dt.is_complex):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype.title(dt)}'")


def _as_complex(parts):
    """The complex array whose elements are the pairs of ``parts``'s last axis (of size 2):
    real part, then imaginary part, the layout of a complex tensor's real view."""
    xp = xp_of(parts)
    if is_array_wrapper(parts):  # (vmap's batched draws: built from their parts instead)
        return parts[..., 0] + parts[..., 1] * 1j
    cdt = np.dtype(np.complex64 if parts.dtype == np.float32 else np.complex128)
    return xp.ascontiguousarray(parts).view(cdt)[..., 0]


def _by_parts(self: Tensor, draw):
    """``draw`` (real values of a shape) for a fill of ``self``: itself for a real tensor; for
    a complex one PyTorch fills the real view, shape ``(*shape, 2)`` in memory order, so each
    element takes two consecutive values, its real part first."""
    if not self.dtype.is_complex:
        return draw
    return lambda shape: _as_complex(draw((*shape, 2)))


def fresh_sample(source, method: str, shape: tuple, dt: _dtype.dtype):
    """The values of ``rand(shape)`` (``method="uniform"``) or ``randn(shape)``
    (``"normal"``) of dtype ``dt`` from ``source`` (a backend or a generator).

    PyTorch makes them as ``uniform_()`` / ``normal_()`` of a new contiguous tensor; a
    complex one fills its real view ``(*shape, 2)``: uniform parts in [0, 1), normal parts of
    std ``1 / sqrt(2)`` (each part gets half the variance, so ``E|z|^2 = 1``), the same
    stream and the same bits as that real fill.
    """
    _fillable(dt, _KERNELS[method], complex_ok=True)
    if not dt.is_complex:
        return getattr(source, method)(shape, dt.np)
    args = (0.0, 1.0 / math.sqrt(2.0)) if method == "normal" else ()
    return _as_complex(getattr(source, method)((*shape, 2), dt.to_real().np, *args))


def _continuous_only(self: Tensor, distribution: str) -> None:
    if self._data.dtype.kind != "f":
        name = _C_NAMES.get(self.dtype.name, self.dtype.name) if distribution == "Cauchy" \
            else scalar_name(self)
        raise RuntimeError(f"{distribution} distribution is a continuous probability "
                           f"distribution. dtype must be a floating point but you specified "
                           f"{name}")


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Fill with samples of N(mean, std^2) (``m.weight.data.normal_(0, 0.02)``)."""
    _float_only(self, "normal_kernel_cpu", complex_ok=True)
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    source, dt = _source(self, generator), self.dtype.to_real().np
    if self.dtype.is_complex:  # each part of N(mean + mean i, std^2) has half the variance
        std = std / math.sqrt(2.0)
    contiguous = bool(self._data.flags.c_contiguous)
    draw = _by_parts(self, lambda shape: source.normal(shape, dt, mean, std, contiguous))
    return _store(self, draw, "NormalBackward0")


def uniform_(self: Tensor, from_: float = 0.0, to: float = 1.0, *, generator=None,
             **kwargs) -> Tensor:
    """Fill with samples of U[from, to) (``from`` may be given by keyword, as in PyTorch)."""
    from_ = kwargs.pop("from", from_)
    if kwargs:
        raise TypeError(f"uniform_() got unexpected keyword arguments {list(kwargs)}")
    _float_only(self, "check_uniform_bounds", complex_ok=True)
    # (a complex tensor fills its real view, each part in [from, to); an empty one returns
    # before PyTorch checks the bounds)
    if not from_ <= to and not (self.dtype.is_complex and self._data.size == 0):
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={from_:g} > to={to:g}")
    source, dt = _source(self, generator), self.dtype.to_real().np
    low = min(from_, to)  # (from_ itself, but for the empty complex tensor let through above)
    draw = _by_parts(self, lambda shape: source.uniform(shape, dt, low, to))
    return _store(self, draw, "UniformBackward0")


def _check_probabilities(p: Tensor) -> None:
    arr = p._data
    if arr.dtype.kind != "f":
        raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                  f"'{scalar_name(p)}'")
    if arr.size:
        p._backend.check((arr >= 0) & (arr <= 1), RuntimeError,
                         "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could "
                         "this error message be improved?  If so, please report an "
                         "enhancement request to PyTorch.)")


def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fill with 1 where a uniform draw is below ``p`` (a number or a broadcastable tensor
    of probabilities), else 0."""
    source = _source(self, generator)
    _real_only(self, "bernoulli_tensor_cpu_self_" if isinstance(p, Tensor)
               else "bernoulli_scalar_cpu_")
    if isinstance(p, Tensor):
        _check_probabilities(p)
        probs = p._data
        if p.device != self.device:
            probs = self._backend.asarray(p._backend.to_numpy(probs))
        try:
            probs = xp_of(probs).broadcast_to(probs, self._data.shape)
        except ValueError:
            raise RuntimeError(f"expand(torch.FloatTensor{{{list(p.shape)}}}, size="
                               f"{list(self.shape)}): the number of sizes provided must be "
                               f"greater or equal to the number of dimensions in the "
                               f"tensor") from None
        return _store(self, lambda shape: source.bernoulli_tensor(probs, self._data.dtype),
                      "BernoulliBackward1", in_memory_order=False)
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
    return _store(self, lambda shape: source.bernoulli(p, shape, self._data.dtype),
                  "BernoulliBackward2")


def exponential_(self: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    """Fill with samples of the exponential distribution of rate ``lambd``."""
    _continuous_only(self, "Exponential")
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    source, dt = _source(self, generator), self._data.dtype
    return _store(self, lambda shape: source.exponential(shape, dt, lambd), "ExponentialBackward0")


def geometric_(self: Tensor, p: float, *, generator=None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to and including the first success."""
    if not 0.0 < p < 1.0:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    _real_only(self, "geometric_cpu")
    source, dt = _source(self, generator), self._data.dtype
    return _store(self, lambda shape: source.geometric(shape, dt, p), "GeometricBackward0")


def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *, generator=None) -> Tensor:
    """Fill with exp(N(mean, std^2)) samples."""
    _float_only(self, "log_normal_cpu")
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    source, dt = _source(self, generator), self._data.dtype
    return _store(self, lambda shape: source.log_normal(shape, dt, mean, std), "LogNormalBackward0")


def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Tensor:
    """Fill with samples of the Cauchy distribution."""
    _continuous_only(self, "Cauchy")
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    source, dt = _source(self, generator), self._data.dtype
    return _store(self, lambda shape: source.cauchy(shape, dt, median, sigma), "CauchyBackward0")


def _representable_from(low: int, dt: np.dtype, digits: int) -> int:
    """PyTorch's update_from: a ``from`` the float dtype cannot hold moves up to one it can."""
    above = int(dt.type(low + 1))
    if above < low:
        n = builtins.abs(low + 1).bit_length() - 1
        low = above + (1 << (n - digits + 1))
    return low


def _representable_to(high: int, dt: np.dtype, digits: int) -> int:
    """PyTorch's update_to: a ``to`` whose predecessor the dtype rounds up moves down."""
    below = int(dt.type(high - 1))
    if below >= high:
        n = builtins.abs(high - 1).bit_length() - 1
        high = below - (1 << (n - digits + 1))
    return high


def _random_bounds(dt: np.dtype, low: int, high) -> tuple[int, int]:
    """[low, high) checked against what the dtype holds exactly (PyTorch's bound checks)."""
    name = _dtype.from_numpy_dtype(dt).name
    if dt.kind == "c":
        where = "random_from_to_impl" if high is None else "check_random_bounds"
        raise RuntimeError(f"{where} handles only integral, floating-point and boolean types")
    if dt.kind == "f":
        digits = np.finfo(dt).nmant + 1
        top = 1 << digits
        if high is None:
            return low, top + 1
        for bound, label in ((low, "from"), (high - 1, "to - 1")):
            if not -top <= bound <= top:
                kind = {"float16": "Half", "float32": "float", "float64": "double"}[name]
                warnings.warn(f"{label} is out of bounds [-(2^{digits}), 2^{digits}]. Due to "
                              f"precision limitations {kind} can support discrete uniform "
                              f"distribution only within this range.", UserWarning,
                              stacklevel=4)
        return _representable_from(low, dt, digits), _representable_to(high, dt, digits)
    lo, hi = (0, 1) if dt == np.bool_ else (int(np.iinfo(dt).min), int(np.iinfo(dt).max))
    if high is None:
        high = hi + 1
    if not lo <= low <= hi:
        raise RuntimeError(f"from is out of bounds for {_C_NAMES.get(name, name)}")
    if not lo <= high - 1 <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {_C_NAMES.get(name, name)}")
    return low, high


def random_(self: Tensor, *args, generator=None, **kwargs) -> Tensor:
    """Fill with integers: ``random_()`` over the dtype's exact range, ``random_(to)`` from
    [0, to), ``random_(from, to)`` from [from, to) (``to=None``: up to the dtype's largest)."""
    if "from" in kwargs:
        args = (kwargs.pop("from"), kwargs.pop("to", None), *args)
    elif "to" in kwargs:
        args = (*args, kwargs.pop("to")) if args else (0, kwargs.pop("to"))
    if kwargs:
        raise TypeError(f"random_() got unexpected keyword arguments {list(kwargs)}")
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 arguments ({len(args)} given)")
    source = _source(self, generator)
    dt = self._data.dtype
    if not args:
        _real_only(self, "random_kernel_cpu")
        if dt.kind == "c":  # (empty: nothing to draw)
            return _store(self, lambda shape: np.empty(shape, dt), "RandomBackward0")
        return _store(self, lambda shape: source.random_bits(shape, dt), "RandomBackward0")
    low, high = (0, args[0]) if len(args) == 1 else args
    low = int(low)
    high = None if high is None else int(high)
    if high is not None and not low < high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    low, high = _random_bounds(dt, low, high)
    return _store(self, lambda shape: source.integers(low, high, shape, np.int64),
                  "RandomBackward1" if len(args) == 1 else "RandomBackward2")


# -- functions -----------------------------------------------------------------------------------
def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, layout=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """Samples of N(mean, std^2): ``normal(mean_tensor, std_tensor)`` (broadcast, one draw of
    the broadcast shape scaled by std and shifted by mean, as PyTorch computes it),
    ``normal(mean, std_number)``, ``normal(mean_number, std)`` or
    ``normal(mean_number, std_number, size)``."""
    from .creation import empty

    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        if isinstance(std, Tensor) and std.dtype.is_complex:  # (a complex mean is fine)
            raise RuntimeError("normal expects standard deviation to be non-complex")
        for s in (std,) if isinstance(std, Tensor) else ():
            if s._data.size and not bool((s._data >= 0).all()):
                raise RuntimeError("normal expects all elements of std >= 0.0")
        if is_scalar(std) and not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        ref = mean if isinstance(mean, Tensor) else std
        shape = np.broadcast_shapes(*(tuple(x.shape) for x in (mean, std)
                                      if isinstance(x, Tensor)))
        draw = empty(shape, dtype=ref.dtype, device=ref.device)
        if is_scalar(std):
            arr = normal_(draw, 0.0, std, generator=generator)._data + mean._data
        else:
            mean_arr = mean._data if isinstance(mean, Tensor) else mean
            arr = normal_(draw, 0.0, 1.0, generator=generator)._data * std._data + mean_arr
        arr = arr.astype(ref._data.dtype, copy=False)
        name = {(True, False): "NormalBackward1", (False, True): "NormalBackward2"}.get(
            (isinstance(mean, Tensor), isinstance(std, Tensor)), "NormalBackward3")
        return Sampled.apply(arr, name, mean, std)
    if size is None:
        raise TypeError("normal() received an invalid combination of arguments: with a "
                        "number mean and std, give the output's size")
    check_layout(layout, "normal")
    out = empty(size, dtype=dtype, device=device)
    return normal_(out, mean, std, generator=generator).requires_grad_(requires_grad)


def bernoulli(input: Tensor, p=None, *, generator=None) -> Tensor:
    """0/1 samples: 1 with probability ``input`` elementwise (or with probability ``p``),
    of input's dtype and shape."""
    from .creation import empty_like

    out = empty_like(input)
    if p is None:
        bernoulli_(out, input, generator=generator)
        return Sampled.apply(out._data, "BernoulliBackward0", input)
    return bernoulli_(out, p, generator=generator)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator=None) -> Tensor:
    """Indices drawn from the rows of ``input`` (non-negative weights, 1-D or 2-D).

    PyTorch's CPU algorithms and stream: without replacement (or one sample), the top
    ``num_samples`` of ``weight / Exp(1)`` draws (Gumbel's trick); with replacement, a
    binary search of one double uniform per sample in the normalised cumulative weights.
    """
    arr = input._data
    if arr.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if arr.dtype.kind != "f":
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{scalar_name(input)}")
    n_categories = arr.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n_categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if n_categories > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    xp = xp_of(arr)
    if not bool((xp.isfinite(arr) & (arr >= 0)).all()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    rows = arr.reshape(-1, n_categories)
    if not bool((rows.sum(axis=1) > 0).all()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    source = _source(input, generator)
    if not replacement or num_samples == 1:
        q = input._backend.asarray(source.exponential(arr.shape, arr.dtype, 1.0))
        q = arr / q
        if num_samples == 1:
            idx = q.argmax(axis=-1)[..., None]
        else:
            from .sorting import _sort_indices

            idx = _sort_indices(q, q.ndim - 1, True)[..., :num_samples]
        return Tensor._make(xp.ascontiguousarray(idx.astype(np.int64)))
    out = xp.empty((rows.shape[0], num_samples), np.int64)
    for i in range(rows.shape[0]):
        # Running sums in the input's dtype (half: float), divided by the total, the last
        # one forced to 1; lower-bound search of each double uniform, as the CPU kernel does.
        row = rows[i].astype(np.float32) if arr.dtype == np.float16 else rows[i]
        cum = xp.cumsum(row, dtype=row.dtype)
        cum = cum / cum[-1]
        cum[-1] = 1
        u = input._backend.asarray(source.unit_doubles(num_samples))
        out[i] = xp.searchsorted(cum.astype(np.float64), u, side="left")
    return Tensor._make(out.reshape(*arr.shape[:-1], num_samples))


def poisson(input: Tensor, generator=None) -> Tensor:
    """A Poisson sample for each rate of ``input`` (non-negative floats), of its dtype."""
    arr = input._data
    _float_only(input, "poisson_cpu")
    if arr.size and not bool((arr >= 0).all()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    rates = xp_of(arr).ascontiguousarray(arr)
    sample = input._backend.asarray(_source(input, generator).poisson(rates))
    return Sampled.apply(sample, "PoissonBackward0", input)


def _bernoulli_method(self: Tensor, p=None, *, generator=None) -> Tensor:
    return bernoulli(self, p, generator=generator)


def _multinomial_method(self: Tensor, num_samples: int, replacement: bool = False, *,
                        generator=None) -> Tensor:
    return multinomial(self, num_samples, replacement, generator=generator)


METHODS = {"normal_": normal_, "uniform_": uniform_, "bernoulli_": bernoulli_,
           "exponential_": exponential_, "geometric_": geometric_, "log_normal_": log_normal_,
           "cauchy_": cauchy_, "random_": random_, "bernoulli": _bernoulli_method,
           "multinomial": _multinomial_method}
