"""PyTorch-compatible CPU random number generation in pure NumPy.

``Generator`` reproduces, bit for bit, the numbers that PyTorch's CPU generator
(``at::CPUGeneratorImpl``: a 32-bit Mersenne Twister plus a cached Box-Muller sample) produces
for ``torch.rand``/``uniform_``, ``torch.randn``/``normal_``, ``torch.randint``, ``torch.randperm``
and ``bernoulli_(p)``, and it advances its state exactly as torch does, so any interleaving of
calls stays in step with torch after the same ``manual_seed``.  ``get_state`` returns the same
5056 bytes as ``torch.get_rng_state()``, and ``set_state`` accepts torch's bytes.

How torch turns the 32-bit stream into numbers (ATen ``DistributionsHelper.h``,
``TransformationHelper.h``, ``native/cpu/DistributionTemplates.h``):

* ``random()`` is one mt19937 word; ``random64()`` is two words, the first one the high half.
* uniform float32: one word, masked to 24 bits, times 2**-24; float64: one ``random64()``,
  masked to 53 bits, times 2**-53.  Then ``x * (to - from) + from``, fused into one FMA.
* normal, fewer than 16 elements: per element Box-Muller in double precision from two
  ``random64()`` uniforms; the sine half is cached in the generator and returned by the next
  small normal call (whatever its dtype), the cosine half is returned now.
* normal, 16 or more elements: fill the whole tensor with uniforms, transform them in blocks of
  16 (first 8 with last 8); if the size is not a multiple of 16, draw 16 fresh uniforms and
  redo the last 16 elements.  float32 uses AVX2 polynomial approximations of log/sin/cos
  (``avx_mathfun.h``, compiled with FMA); we replay those operations in float32 here.
  float64 uses the C library's ``log``/``sin``/``cos``: we call Python's ``math`` module, which
  wraps the same libm (NumPy's own SIMD ``log`` differs from glibc in the last bit).
* float16 and bfloat16 (torch 2.13): computed through the float32 samplers and rounded, see
  ``uniform`` and ``normal`` for the two quirks (wrap-around at ``high``; padded 16-blocks).
* randint: ``(word % range) + low``, with a ``random64()`` word once the range is >= 2**28.
* randperm: a Fisher-Yates pass with ``random() % (n - i)``.
* bernoulli_(p): one double uniform per element, ``u < p``.

Where the result depends on the machine, we follow torch on x86-64 CPUs with AVX2 (every
current desktop/server CPU): torch never uses its AVX-512 kernel for ``normal_``, so AVX2 and
AVX-512 machines agree.  On CPUs without AVX2, or ARM builds, torch's float32 ``randn`` of 16 or
more elements uses libm instead and can differ from this module in the last bit.  Older torch
builds on Intel CPUs drew ``bernoulli_(p)`` through MKL's VSL streams; torch 2.13 draws it from
mt19937 as done here.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Sequence

import ml_dtypes
import numpy as np

from .exact_fma import fma

__all__ = ["DEFAULT_SEED", "Generator", "default_generator"]

DEFAULT_SEED = 67280421310721  # torch.Generator()'s default seed
_N = 624  # mt19937 state size in 32-bit words
_STATE_NBYTES = 5056  # sizeof(CPUGeneratorImplState) in torch
_M32 = 0xFFFFFFFF
_U64_MASK = (1 << 64) - 1
_WIDE_RANGE = 1 << 28  # randint ranges from here on draw 64 bits per element

_f16, _f32, _f64 = np.float16, np.float32, np.float64
_bf16 = ml_dtypes.bfloat16
Shape = int | Sequence[int]


# --------------------------------------------------------------------------- helpers


def _shape_numel(shape: Shape) -> tuple[tuple[int, ...], int]:
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    return shape, math.prod(shape)


def _float_dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in (np.dtype(_f16), np.dtype(_bf16), np.dtype(_f32), np.dtype(_f64)):
        raise TypeError(f"expected float16, bfloat16, float32 or float64, got {dt}")
    return dt


def _init_genrand(seed: int) -> np.ndarray:
    """mt19937's init_genrand: torch seeds its engine with the low 32 bits of the seed."""
    key = np.empty(_N, dtype=np.uint32)
    x = seed & _M32
    key[0] = x
    for j in range(1, _N):
        x = (1812433253 * (x ^ (x >> 30)) + j) & _M32
        key[j] = x
    return key


# ------------------------------------------------ torch's AVX2 log/sin/cos (avx_mathfun.h)
# These replay log256_ps and sincos256_ps operation by operation in float32.  torch compiles
# them with GCC and -mfma, which fuses every "multiply, then add the product" pair into one
# FMA; we fuse exactly the same pairs (verified against torch on millions of samples).

_LOG_P = [_f32(v) for v in (
    7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
    -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1,
)]
_LOG_Q1, _LOG_Q2 = _f32(-2.12194440e-4), _f32(0.693359375)
_SQRTHF = _f32(0.707106781186547524)
_MIN_NORM = np.array(0x00800000, np.int32).view(_f32)
_DP = [_f32(-0.78515625), _f32(-2.4187564849853515625e-4), _f32(-3.77489497744594108e-8)]
_SINCOF = [_f32(-1.9515295891e-4), _f32(8.3321608736e-3), _f32(-1.6666654611e-1)]
_COSCOF = [_f32(2.443315711809948e-005), _f32(-1.388731625493765e-003),
           _f32(4.166664568298827e-002)]
_FOPI = _f32(1.27323954473516)  # 4 / pi
_ONE, _HALF = _f32(1.0), _f32(0.5)


def _log256_ps(x: np.ndarray) -> np.ndarray:
    """Cephes-style float32 log of avx_mathfun (inputs here are in (0, 1])."""
    x = np.maximum(x, _MIN_NORM)
    bits = x.view(np.int32)
    e = ((bits >> 23) - 0x7F).astype(_f32) + _ONE
    x = ((bits & ~0x7F800000) | _HALF.view(np.int32)).view(_f32)  # mantissa in [0.5, 1)
    small = x < _SQRTHF  # then use 2x - 1 and one less exponent
    tmp = np.where(small, x, _f32(0))
    x = x - _ONE
    e = e - np.where(small, _ONE, _f32(0))
    x = x + tmp
    z = x * x
    y = np.full_like(x, _LOG_P[0])
    for p in _LOG_P[1:]:
        y = fma(y, x, p)
    y = y * x
    y = fma(y, z, e * _LOG_Q1)  # y*z + e*q1: GCC fuses the y*z product
    y = y - z * _HALF
    return fma(e, _LOG_Q2, x + y)


def _sincos256_ps(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cephes-style float32 sin and cos of avx_mathfun (inputs here are in [0, 2*pi))."""
    sign_sin = x.view(np.uint32) & np.uint32(0x80000000)
    x = np.abs(x)
    j = (x * _FOPI).astype(np.int32)  # cvttps: truncation
    j = (j + 1) & ~1
    y = j.astype(_f32)
    swap_sin = ((j & 4) << 29).astype(np.uint32)
    poly = (j & 2) == 0
    for dp in _DP:  # extended precision reduction x - y*pi/4
        x = fma(y, dp, x)
    sign_cos = ((~(j - 2) & 4) << 29).astype(np.uint32)
    sign_sin = sign_sin ^ swap_sin
    z = x * x
    yc = fma(np.full_like(x, _COSCOF[0]), z, _COSCOF[1])
    yc = fma(yc, z, _COSCOF[2])
    yc = fma(yc * z, z, -(z * _HALF))
    yc = yc + _ONE
    ys = fma(np.full_like(x, _SINCOF[0]), z, _SINCOF[1])
    ys = fma(ys, z, _SINCOF[2])
    ys = fma(ys * z, x, x)
    s = np.where(poly, ys, yc)
    c = np.where(poly, yc, ys)
    s = (s.view(np.uint32) ^ sign_sin).view(_f32)
    c = (c.view(np.uint32) ^ sign_cos).view(_f32)
    return s, c


def _libm(fn, x: np.ndarray) -> np.ndarray:
    """Apply a ``math`` function (the C library's, as torch uses) elementwise, at C speed."""
    flat = x.ravel().tolist()
    return np.fromiter(map(fn, flat), dtype=_f64, count=len(flat)).reshape(x.shape)


# ------------------------------------------------------------------------- Generator


class Generator:
    """PyTorch-compatible mt19937 CPU generator.

    The Mersenne Twister itself runs in NumPy's C implementation (``np.random.MT19937`` is the
    same engine; we only seed it the way torch does and read its raw 32-bit words).  All
    samplers return NumPy arrays and match ``torch`` bit for bit; see the module docstring.
    """

    __module__ = "microtorch"  # its public name, as PyTorch's
    def __init__(self, device="cpu", seed: int | None = None) -> None:
        # PyTorch's signature is Generator(device='cpu'); Generator(seed) is kept as a
        # shorthand (an integer first argument is a seed, never a device here).
        if isinstance(device, (int, np.integer)) and not isinstance(device, bool):
            device, seed = "cpu", device
        if str(device) != "cpu":
            raise NotImplementedError(
                f"microtorch.Generator replays PyTorch's CPU stream only (got device "
                f"{str(device)!r}); CUDA tensors draw from their device's CuPy generator, "
                f"seeded by microtorch.manual_seed")
        self._engine = np.random.MT19937(0)
        self.manual_seed(DEFAULT_SEED if seed is None else seed)

    @property
    def device(self):
        """The device whose stream this generator makes (always the CPU)."""
        from .device import CPU

        return CPU

    # ---------------------------------------------------------------- seeding and state
    def manual_seed(self, seed: int) -> Generator:
        seed = int(seed)
        if not -(1 << 63) <= seed <= _U64_MASK:
            raise ValueError(f"seed must be within [-2**63, 2**64 - 1], got {seed}")
        seed &= _U64_MASK  # torch stores negative seeds as their uint64 bit pattern
        self._seed = seed
        self._set_engine(_init_genrand(seed), _N)
        # torch's engine right after seeding reports next=0 (not 624); kept for get_state.
        self._next_when_exhausted = 0
        self._next_double_normal: float | None = None
        # torch keeps a float cache too; its CPU kernels never fill it, but it is part of
        # the state bytes, so we carry it through get_state/set_state unchanged.
        self._next_float_normal: float | None = None
        return self

    def initial_seed(self) -> int:
        return self._seed

    def seed(self) -> int:
        """Reseed from the OS entropy pool, like ``torch.seed()``; returns the new seed."""
        seed = int.from_bytes(os.urandom(8), "little") & ((1 << 53) - 1)
        self.manual_seed(seed)
        return seed

    def _set_engine(self, key: np.ndarray, pos: int) -> None:
        self._engine.state = {
            "bit_generator": "MT19937",
            "state": {"key": np.asarray(key, dtype=np.uint32), "pos": int(pos)},
        }

    def get_state(self) -> np.ndarray:
        """The generator state as torch's 5056 bytes (``torch.get_rng_state()`` layout)."""
        st = self._engine.state["state"]
        pos = int(st["pos"])
        # torch: `left` words remain before the next twist; `next` indexes the next word.
        left = _N + 1 - pos
        nxt = self._next_when_exhausted if pos == _N else pos
        buf = bytearray(_STATE_NBYTES)
        header = np.array([self._seed], np.uint64).tobytes()
        header += np.array([left, 1], np.int32).tobytes()  # left, seeded
        header += np.array([nxt], np.uint64).tobytes()
        buf[0:24] = header
        buf[24:5016] = np.asarray(st["key"], np.uint64).tobytes()
        if self._next_double_normal is not None:
            buf[5024:5032] = np.array([self._next_double_normal], _f64).tobytes()  # normal_y
            buf[5040:5044] = np.array([1], np.int32).tobytes()  # normal_is_valid
        if self._next_float_normal is not None:
            buf[5044:5048] = np.array([self._next_float_normal], _f32).tobytes()
            buf[5048] = 1
        return np.frombuffer(bytes(buf), dtype=np.uint8).copy()

    def set_state(self, state: np.ndarray) -> None:
        """Restore a state from ``get_state`` (or from ``torch.get_rng_state().numpy()``)."""
        arr = np.asarray(state)
        if arr.dtype != np.uint8 or arr.ndim != 1 or arr.size != _STATE_NBYTES:
            raise ValueError(
                f"RNG state must be a 1-D uint8 array of {_STATE_NBYTES} bytes, "
                f"got dtype={arr.dtype} shape={arr.shape}"
            )
        raw = arr.tobytes()
        seed = int(np.frombuffer(raw, np.uint64, 1, 0)[0])
        left, seeded = (int(v) for v in np.frombuffer(raw, np.int32, 2, 8))
        nxt = int(np.frombuffer(raw, np.uint64, 1, 16)[0])
        key = np.frombuffer(raw, np.uint64, _N, 24)
        if seeded != 1 or not 1 <= left <= _N or nxt > _N:
            raise ValueError(f"invalid mt19937 state (seeded={seeded}, left={left}, next={nxt})")
        if left != 1 and nxt != _N + 1 - left:
            # torch would read words next..next+left-2 and then twist; every state torch
            # itself produces has next == 625 - left, which is all we can represent.
            raise ValueError(f"unsupported mt19937 state: next={nxt} with left={left}")
        if np.any(key > _M32):
            raise ValueError("invalid mt19937 state: words must fit in 32 bits")
        valid = int(np.frombuffer(raw, np.int32, 1, 5040)[0])
        fvalid = raw[5048]
        if valid not in (0, 1) or fvalid not in (0, 1):
            raise ValueError("invalid normal-cache flags in RNG state")
        self._seed = seed
        self._set_engine(key.astype(np.uint32), _N + 1 - left)
        self._next_when_exhausted = nxt
        y = float(np.frombuffer(raw, _f64, 1, 5024)[0])
        self._next_double_normal = y if valid else None
        fy = float(np.frombuffer(raw, _f32, 1, 5044)[0])
        self._next_float_normal = fy if fvalid else None

    # ------------------------------------------------------------------- raw streams
    def _random(self, n: int) -> np.ndarray:
        """n words of ``random()`` (uint64 holding 32-bit values)."""
        if n == 0:
            return np.empty(0, dtype=np.uint64)
        self._next_when_exhausted = _N  # once a word is drawn, torch's next tracks pos
        return self._engine.random_raw(n)

    def _random64(self, n: int) -> np.ndarray:
        """n values of ``random64()``: two words each, the first one the high half."""
        w = self._random(2 * n).reshape(n, 2)
        return (w[:, 0] << np.uint64(32)) | w[:, 1]

    def _unit(self, n: int, dtype: np.dtype) -> np.ndarray:
        """``uniform_real_distribution<T>(0, 1)``: n float32 or float64 uniforms in [0, 1)."""
        if dtype == _f64:
            return (self._random64(n) & np.uint64((1 << 53) - 1)).astype(_f64) * 2.0**-53
        return (self._random(n) & np.uint64(0xFFFFFF)).astype(_f32) * _f32(2.0**-24)

    # ------------------------------------------------------------------------ uniform
    def uniform(self, shape: Shape, dtype=_f32, low: float = 0.0, high: float = 1.0) -> np.ndarray:
        """``torch.rand(shape)`` / ``Tensor.uniform_(low, high)``: uniform in [low, high)."""
        shape, n = _shape_numel(shape)
        dt = _float_dtype(dtype)
        if not low <= high:
            raise ValueError(f"uniform expects low <= high, got low={low}, high={high}")
        if dt == _f64:
            x = self._unit(n, dt)
            lo, hi = _f64(low), _f64(high)
            out = fma(x, hi - lo, lo)  # x * (to - from) + from, fused by the compiler
        elif dt == _f32:
            x = self._unit(n, dt)
            lo, hi = _f32(low), _f32(high)
            out = fma(x, hi - lo, lo)
        else:
            # torch 2.13 computes half uniforms as float32 ones (24-bit, float bounds) and
            # rounds them to half; a value that rounds up to `high` is replaced by `low`, which
            # keeps the result in [low, high).
            x = self._unit(n, np.dtype(_f32))
            lo, hi = _f32(low), _f32(high)
            out = fma(x, hi - lo, lo).astype(dt)
            out = np.where(out >= hi.astype(dt), lo.astype(dt), out)
        return out.astype(dt, copy=False).reshape(shape)

    # ------------------------------------------------------------------------- normal
    def normal(self, shape: Shape, dtype=_f32, mean: float = 0.0, std: float = 1.0,
               contiguous: bool = True) -> np.ndarray:
        """``torch.randn(shape)`` / ``Tensor.normal_(mean, std)``; ``contiguous=False`` is
        ``normal_`` on a non-contiguous tensor, which torch fills one Box-Muller sample at a
        time whatever its size."""
        shape, n = _shape_numel(shape)
        dt = _float_dtype(dtype)
        if not std >= 0.0:
            raise ValueError(f"normal expects std >= 0.0, got std={std}")
        if n < 16 or not contiguous:
            out = self._normal_doubles(n, float(mean), float(std))
            # static_cast<scalar_t>(double); c10::Half converts double via float.
            out = out.astype(_f32).astype(dt) if dt in (_f16, _bf16) else out.astype(dt)
            return out.reshape(shape)
        if dt == _f32:
            out = self._normal_fill(n, _f32, lambda d: _normal16_avx2(d, _f32(mean), _f32(std)))
        elif dt == _f64:
            out = self._normal_fill(n, _f64, lambda d: _normal16_f64(d, _f64(mean), _f64(std)))
        else:
            # torch 2.13 draws half normals through float32: it draws uniforms for whole
            # blocks of 16 (rounding n up), transforms every block with the float32 kernel and
            # keeps the last block for the last 16 elements; then rounds to half.
            blocks = -(-n // 16)
            d = self._unit(16 * blocks, np.dtype(_f32)).reshape(blocks, 16)
            z = _normal16_avx2(d, _f32(mean), _f32(std)).ravel()
            if n % 16:
                z = np.concatenate([z[: n - 16], z[-16:]])
            out = z.astype(dt)
        return out.reshape(shape)

    def _normal_scalar(self, mean: float, std: float) -> float:
        """``at::normal_distribution<double>``: Box-Muller, caching the second sample."""
        if self._next_double_normal is not None:
            ret, self._next_double_normal = self._next_double_normal, None
        else:
            u1, u2 = (float(u) for u in self._unit(2, np.dtype(_f64)))
            r = math.sqrt(-2.0 * math.log1p(-u2))
            theta = 2.0 * math.pi * u1
            self._next_double_normal = r * math.sin(theta)
            ret = r * math.cos(theta)
        return float(fma(ret, std, mean))  # val * std + mean, fused by the compiler

    @contextlib.contextmanager
    def scalar_draws(self, chunk: int = 1024):
        """``(uniform, normal)``: one double uniform / one cached Box-Muller normal per call,
        as ATen's sequential samplers draw them; read ahead in chunks, the engine left exactly
        past the words used on exit."""
        start, exhausted = self._engine.state, self._next_when_exhausted
        f64, buf, pos, used = np.dtype(_f64), [], 0, 0

        def uniform() -> float:
            nonlocal buf, pos, used
            if pos == len(buf):
                buf, pos = self._unit(chunk, f64).tolist(), 0
            pos += 1
            used += 1
            return buf[pos - 1]

        def normal() -> float:
            if self._next_double_normal is not None:
                ret, self._next_double_normal = self._next_double_normal, None
                return ret
            u1, u2 = uniform(), uniform()
            r = math.sqrt(-2.0 * math.log1p(-u2))
            theta = 2.0 * math.pi * u1
            self._next_double_normal = r * math.sin(theta)
            return r * math.cos(theta)

        try:
            yield uniform, normal
        finally:
            self._engine.state = start
            self._next_when_exhausted = exhausted
            self._random(2 * used)

    def _normal_doubles(self, n: int, mean: float, std: float) -> np.ndarray:
        """n calls of ``_normal_scalar`` at once: the cached sine first, then Box-Muller
        pairs (cosine, sine) in order, the last sine cached when n leaves one over."""
        out = np.empty(n, _f64)
        start = 0
        if n and self._next_double_normal is not None:
            out[0], self._next_double_normal = self._next_double_normal, None
            start = 1
        pairs = (n - start + 1) // 2
        if pairs:
            u = self._unit(2 * pairs, np.dtype(_f64)).reshape(pairs, 2)
            r = np.sqrt(-2.0 * _libm(math.log1p, -u[:, 1]))
            theta = 2.0 * math.pi * u[:, 0]
            vals = np.stack([r * _libm(math.cos, theta), r * _libm(math.sin, theta)], 1).ravel()
            out[start:] = vals[:n - start]
            if (n - start) % 2:
                self._next_double_normal = float(vals[-1])
        return fma(out, std, mean) if n else out

    def _normal_fill(self, n: int, dtype, transform16) -> np.ndarray:
        """torch's ``normal_fill``: uniforms for all n, Box-Muller per block of 16, tail redo."""
        data = self._unit(n, np.dtype(dtype))
        full = n - n % 16
        if full:
            data[:full] = transform16(data[:full].reshape(-1, 16)).ravel()
        if n % 16:
            # The last 16 elements (overlapping the transformed blocks) get fresh uniforms.
            tail = self._unit(16, np.dtype(dtype))
            data[n - 16:] = transform16(tail.reshape(1, 16)).ravel()
        return data

    # ----------------------------------------------------------------------- integers
    def integers(self, low: int, high: int, shape: Shape, dtype=np.int64) -> np.ndarray:
        """``torch.randint(low, high, shape, dtype=dtype)``: uniform integers in [low, high)."""
        shape, n = _shape_numel(shape)
        dt = np.dtype(dtype)
        if dt.kind not in "iu":
            raise TypeError(f"integers expects an integer dtype, got {dt}")
        low, high = int(low), int(high)
        if not low < high:
            raise ValueError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                             f">= to={high}")
        info = np.iinfo(dt)
        if low < info.min or high - 1 > info.max:
            raise ValueError(f"[{low}, {high}) is out of bounds for {dt}")
        span = (high - low) & _U64_MASK
        if span == 0:  # the full 64-bit range: a random64() word is the value itself
            return self._random64(n).view(np.int64).astype(dt).reshape(shape)
        # Wide ranges take a random64() per element.  torch 2.13 switches at a range of 2**28
        # for int32 and int64 alike (measured; the older ATen source says 2**32, int64 only).
        words = self._random64(n) if span >= _WIDE_RANGE else self._random(n)
        vals = words % np.uint64(span) + np.uint64(low & _U64_MASK)  # wraps like uint64 in C
        return vals.view(np.int64).astype(dt).reshape(shape)

    # ------------------------------------------------------------------------ randperm
    def randperm(self, n: int, dtype=np.int64) -> np.ndarray:
        """``torch.randperm(n)``.

        The swaps of a Fisher-Yates shuffle depend on each other, so they run in a Python loop
        over lists (about 0.1 s per million elements); the random draws are vectorized.
        """
        n = int(n)
        if n < 0:
            raise ValueError(f"n must be non-negative, got {n}")
        dt = np.dtype(dtype)
        if n < _M32 // 20:
            # torch's path for all practical n: swap i with i + random() % (n - i).
            steps = np.arange(n - 1, dtype=np.int64) if n > 1 else np.empty(0, np.int64)
            z = self._random(len(steps)) % (n - steps).astype(np.uint64)
            perm = list(range(n))
            for i, j in enumerate((z.astype(np.int64) + steps).tolist()):
                perm[i], perm[j] = perm[j], perm[i]
        else:  # inside-out shuffle with 64-bit draws (n >= 2**32 / 20; needs a lot of RAM)
            z = (self._random64(n) % np.arange(1, n + 1, dtype=np.uint64)).tolist()
            perm = [0] * n
            for i, j in enumerate(z):
                perm[i] = perm[j]
                perm[j] = i
        return np.array(perm, dtype=dt)

    # ----------------------------------------------------------------------- bernoulli
    def bernoulli(self, p: float, shape: Shape, dtype=_f32) -> np.ndarray:
        """``Tensor.bernoulli_(p)`` with a float p: 1 where a double uniform is below p.

        Matches torch 2.13's CPU kernel (``bernoulli_distribution<double>``, one ``random64()``
        per element).  Older torch builds that sampled through MKL on Intel CPUs differ.
        """
        shape, n = _shape_numel(shape)
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        return (self._unit(n, np.dtype(_f64)) < p).astype(dtype).reshape(shape)

    def bernoulli_tensor(self, p: np.ndarray, dtype) -> np.ndarray:
        """``Tensor.bernoulli_(p)`` with a tensor ``p`` (already broadcast to the output's
        shape): a float32 uniform per element when p is float32, a double one otherwise."""
        p = np.asarray(p)
        if p.dtype == _f32:
            u = self._unit(p.size, np.dtype(_f32)).reshape(p.shape)
        else:
            u = self._unit(p.size, np.dtype(_f64)).reshape(p.shape)
            p = p.astype(_f64, copy=False)
        return (u < p).astype(dtype)

    # ------------------------------------------- the one-double-per-element distributions
    # torch draws each of these with one ``random64()`` double uniform u per element, in
    # order, transforms it in double precision with the C library (Python's ``math`` wraps
    # the same libm) and casts the double to the tensor's dtype.

    def _doubles(self, shape: Shape, dtype, transform) -> np.ndarray:
        shape, n = _shape_numel(shape)
        u = self._unit(n, np.dtype(_f64))
        return _cast_double(np.fromiter(map(transform, u.tolist()), _f64, n), dtype, shape)

    def exponential(self, shape: Shape, dtype=_f32, lambd: float = 1.0) -> np.ndarray:
        """``Tensor.exponential_(lambd)``: -log(1 - u) / lambd."""
        lambd = float(lambd)
        if not lambd > 0.0:
            raise ValueError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
        scale = -1.0 / lambd
        return self._doubles(shape, dtype, lambda u: scale * math.log1p(-u))

    def geometric(self, shape: Shape, dtype=_f32, p: float = 0.5) -> np.ndarray:
        """``Tensor.geometric_(p)``: ceil(log(u) / log(1 - p)), trials up to the first success."""
        p = float(p)
        if not 0.0 < p < 1.0:
            raise ValueError(f"geometric_ expects p to be in (0, 1), but got p={p}")
        denom = math.log(1.0 - p)
        return self._doubles(shape, dtype,
                             lambda u: math.ceil(math.log(u) / denom) if u > 0 else math.inf)

    def cauchy(self, shape: Shape, dtype=_f32, median: float = 0.0,
               sigma: float = 1.0) -> np.ndarray:
        """``Tensor.cauchy_(median, sigma)``: median + sigma * tan(pi * (u - 1/2))."""
        median, sigma = float(median), float(sigma)
        if not sigma > 0.0:
            raise ValueError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
        return self._doubles(shape, dtype, lambda u: median + sigma * math.tan(math.pi * (u - 0.5)))

    def log_normal(self, shape: Shape, dtype=_f32, mean: float = 1.0,
                   std: float = 2.0) -> np.ndarray:
        """``Tensor.log_normal_(mean, std)``: exp of a double Box-Muller normal per element
        (the cached-sine path of small ``normal_`` calls, whatever the size)."""
        mean, std = float(mean), float(std)
        if not std > 0.0:
            raise ValueError(f"log_normal_ expects std > 0.0, but found std={std}")
        shape, n = _shape_numel(shape)
        return _cast_double(_libm(math.exp, self._normal_doubles(n, mean, std)), dtype, shape)

    def random_bits(self, shape: Shape, dtype) -> np.ndarray:
        """``Tensor.random_()``: integers over the dtype's whole exact range, [0, 2**mantissa]
        for floats (one word per element, two for int64 and float64)."""
        shape, n = _shape_numel(shape)
        dt = np.dtype(dtype)
        if dt == np.bool_:
            return (self._random(n) & np.uint64(1)).astype(bool).reshape(shape)
        wide = dt in (np.dtype(np.int64), np.dtype(_f64))
        words = self._random64(n) if wide else self._random(n)
        if dt.kind == "f":
            modulus = (1 << np.finfo(dt).nmant + 1) + 1
        else:
            modulus = int(np.iinfo(dt).max) + 1
        return (words % np.uint64(modulus)).astype(dt).reshape(shape)

    def poisson(self, rates: np.ndarray) -> np.ndarray:
        """``torch.poisson(rates)``: one sample per rate, in order, by torch's CPU sampler
        (Hoermann's transformed rejection from rate 10 on, products of uniforms below), in
        double precision with the C library's log/lgamma; the rates' dtype."""
        flat = np.asarray(rates, _f64).ravel().tolist()
        if any(not r >= 0 for r in flat):
            raise ValueError("invalid Poisson rate, expected rate to be non-negative")
        out = [self._poisson_one(r) for r in flat]
        return np.array(out, _f64).astype(np.asarray(rates).dtype).reshape(np.shape(rates))

    def _poisson_one(self, lam: float) -> int:
        def uniform() -> float:
            return float(self._unit(1, np.dtype(_f64))[0])

        if lam >= 10:
            slam, loglam = math.sqrt(lam), math.log(lam)
            b = 0.931 + 2.53 * slam
            a = -0.059 + 0.02483 * b
            invalpha = 1.1239 + 1.1328 / (b - 3.4)
            vr = 0.9277 - 3.6224 / (b - 2)
            while True:
                u = uniform() - 0.5
                v = uniform()
                us = 0.5 - abs(u)
                k = math.floor((2 * a / us + b) * u + lam + 0.43)
                if us >= 0.07 and v <= vr:
                    return k
                if k < 0 or (us < 0.013 and v > us):
                    continue
                if (math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)
                        <= -lam + k * loglam - math.lgamma(k + 1.0)):
                    return k
        if lam == 0:
            return 0
        enlam, x, prod = math.exp(-lam), 0, 1.0
        while True:
            prod *= uniform()
            if prod > enlam:
                x += 1
            else:
                return x

    def unit_doubles(self, n: int) -> np.ndarray:
        """n double uniforms in [0, 1) (``uniform_real_distribution<double>``)."""
        return self._unit(int(n), np.dtype(_f64))


def _cast_double(values: np.ndarray, dtype, shape: tuple) -> np.ndarray:
    """``static_cast<scalar_t>(double)``: a half goes through float, as c10::Half converts."""
    dt = np.dtype(dtype)
    if dt == _f16:
        values = values.astype(_f32)
    if dt.kind in "iu":
        with np.errstate(invalid="ignore"):
            return values.astype(dt).reshape(shape)
    return values.astype(dt).reshape(shape)


# -------------------------------------------------------------- Box-Muller on 16-blocks


def _normal16_avx2(d: np.ndarray, mean: np.float32, std: np.float32) -> np.ndarray:
    """normal_fill_16_AVX2 on rows of 16 float32 uniforms."""
    u1 = _ONE - d[:, :8]
    u2 = d[:, 8:]
    radius = np.sqrt(_f32(-2.0) * _log256_ps(u1))
    theta = _f32(2.0 * math.pi) * u2
    s, c = _sincos256_ps(theta)
    return np.concatenate([fma(radius * c, std, mean), fma(radius * s, std, mean)], axis=1)


def _normal16_f64(d: np.ndarray, mean: np.float64, std: np.float64) -> np.ndarray:
    """normal_fill_16<double>, with the C library's log/cos/sin."""
    u1 = 1.0 - d[:, :8]
    u2 = d[:, 8:]
    radius = np.sqrt(-2.0 * _libm(math.log, u1))
    theta = (2.0 * math.pi) * u2
    c, s = _libm(math.cos, theta), _libm(math.sin, theta)
    return np.concatenate([fma(radius * c, std, mean), fma(radius * s, std, mean)], axis=1)


default_generator = Generator()
