"""numba loops for ``resample_exact`` and ``resample_area``: the same float operations in
the same order as their NumPy paths (which stay the reference and the fallback), in one pass
instead of a dozen (NumPy's copies of broadcast weights and layer-by-layer scatters cost some
ten times PyTorch's time). Multiply-adds fuse where the caller says PyTorch's build fuses
(``_multiply_add``: LLVM's exact ``fma``); numba forms no others. Importing this module
imports numba (ImportError when it is missing).
"""

from __future__ import annotations

from ..backend._kernels import _compiled, _multiply_add

__all__ = ["scatter_terms", "scatter_cubic_terms", "gather_sum"]


@_compiled
def scatter_terms(acc, g, target, source, weight, fused):
    """For each term j in order: ``acc[target[j]] = weight[j] * g[source[j]] + acc[...]``
    (rounded once when ``fused``), along the rows of (positions, M) arrays: PyTorch's
    backward loops, every term in its order."""
    for j in range(target.shape[0]):
        t, s, w = target[j], source[j], weight[j]
        for m in range(acc.shape[1]):
            acc[t, m] = _multiply_add(w, g[s, m], acc[t, m], fused)


@_compiled
def scatter_cubic_terms(acc, g, target, source, wy, wx):
    """For each term j in order: ``acc[target[j]] += (g[source[j]] * wy[j]) * wx[j]``
    (bicubic's backward, never fused)."""
    for j in range(target.shape[0]):
        t, s, a, b = target[j], source[j], wy[j], wx[j]
        for m in range(acc.shape[1]):
            acc[t, m] = acc[t, m] + (g[s, m] * a) * b


@_compiled
def gather_sum(out, x, index, weight, vector, fused):
    """``out[a, o, b] = sum_k x[a, index[k, o], b] * weight[k, o]`` over (A, size, B) and
    (A, out, B) arrays, summed as ``resample_exact._sum`` does: rows a with ``vector[a]``
    right to left (the last pair ``fma(tn, wn, tm * wm)``), the others left to right (the
    first pair ``fma(t0, w0, t1 * w1)``); then each further term fused where ``fused``."""
    n = index.shape[0]
    for a in range(out.shape[0]):
        for o in range(out.shape[1]):
            for b in range(out.shape[2]):
                if vector[a]:
                    k0, k1, step = n - 1, n - 2, -1
                else:
                    k0, k1, step = 0, 1, 1
                p = x[a, index[k1, o], b] * weight[k1, o]
                if fused:
                    s = _multiply_add(x[a, index[k0, o], b], weight[k0, o], p, True)
                else:
                    s = x[a, index[k0, o], b] * weight[k0, o] + p
                k = k1 + step
                for _ in range(n - 2):
                    q = x[a, index[k, o], b]
                    if fused:
                        s = _multiply_add(q, weight[k, o], s, True)
                    elif step < 0:
                        s = q * weight[k, o] + s
                    else:
                        s = s + q * weight[k, o]
                    k += step
                out[a, o, b] = s

