"""Run PyTorch's OpInfo samples of the linear-algebra entries through microtorch.

Each sample of an ``op_db`` entry is run by PyTorch and by microtorch on the same values: the
outputs (after the entry's ``output_process_fn_grad``, which makes decompositions
gauge-invariant, e.g. ``|U|`` for the SVD) must agree in shape, dtype and value, and where the
entry supports autograd, so must the gradients of every input, through the entry's
``gradcheck_wrapper`` (Hermitian or triangular projections of the inputs), for a random
upstream gradient. The helper functions of the OpInfo module run on microtorch tensors with
``torch`` rebound to microtorch (``torch.diag_embed``, which microtorch lacks, is composed
here from microtorch ops for the wrappers' sake).

``python tests/_opinfo_linalg.py`` prints the per-entry counts.
"""

from __future__ import annotations

import types

import numpy as np

import microtorch as mt

# PyTorch's entries of the linear-algebra namespace (``linalg.*``) and the top-level ones.
TOPLEVEL = {"svd", "qr", "pinverse", "logdet", "cholesky_solve", "cholesky_inverse",
            "lu_unpack", "matrix_exp", "cholesky", "lu", "lu_solve", "triangular_solve",
            "geqrf", "ormqr"}


# Float64 and complex128: tight tolerances; the differences left are LAPACK builds (PyTorch's
# MKL against NumPy's OpenBLAS) amplified by the conditioning of the samples (gaps between
# singular values or eigenvalues in the decompositions' gradients).
TOL = {"float64": dict(rtol=1e-7, atol=1e-7), "complex128": dict(rtol=1e-7, atol=1e-7),
       "float32": dict(rtol=1e-3, atol=1e-3), "complex64": dict(rtol=1e-3, atol=1e-3)}


def entries():
    """The OpInfo entries this runner covers, in op_db order."""
    from torch.testing._internal.common_methods_invocations import op_db

    return [op for op in op_db if (op.name.startswith("linalg.") or op.name in TOPLEVEL)]


def entry_id(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


class _TorchShim(types.ModuleType):
    """``torch`` for the OpInfo helpers when they run on microtorch tensors."""

    def __getattr__(self, name):
        if name == "diag_embed":
            return lambda v: v.unsqueeze(-1) * mt.eye(v.shape[-1], dtype=v.dtype,
                                                      device=v.device)
        return getattr(mt, name)


_SHIM = _TorchShim("torch")


def rebound(fn):
    """``fn`` (an OpInfo helper) with the global ``torch`` standing for microtorch."""
    if fn is None or not isinstance(fn, types.FunctionType):
        return fn
    glb = dict(fn.__globals__)
    glb["torch"] = _SHIM
    out = types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__, fn.__closure__)
    out.__kwdefaults__ = fn.__kwdefaults__
    return out


def mt_function(op):
    """microtorch's function for an OpInfo entry (the entry's own Python function, e.g. the
    lambda of ``lstsq.grad_oriented``, rebound to microtorch)."""
    if isinstance(op.op, types.FunctionType) and "<lambda>" in op.op.__qualname__:
        return rebound(op.op)
    if op.name.startswith("linalg."):
        return getattr(mt.linalg, op.name.split(".", 1)[1])
    return getattr(mt, op.name)


def _convert(value, to_mt: bool, device: str, leaves: list):
    import torch

    if isinstance(value, torch.Tensor):
        arr = value.detach().cpu().resolve_conj().numpy()
        grad = value.requires_grad and value.dtype.is_floating_point or \
            value.requires_grad and value.dtype.is_complex
        if to_mt:
            t = mt.tensor(arr, device=device, requires_grad=grad)
        else:
            t = torch.tensor(arr, requires_grad=grad)
        if grad:
            leaves.append(t)
        return t
    if isinstance(value, (list, tuple)):
        out = [_convert(v, to_mt, device, leaves) for v in value]
        return type(value)(out) if isinstance(value, tuple) else out
    if isinstance(value, dict):
        return {k: _convert(v, to_mt, device, leaves) for k, v in value.items()}
    return value


def _flatten(out) -> list:
    if isinstance(out, (list, tuple)):
        return [x for o in out for x in _flatten(o)]
    return [out]


def _array(t):
    if hasattr(t, "resolve_conj"):  # (PyTorch's lazily conjugated tensors)
        t = t.resolve_conj()
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


def run_sample(op, sample, dtype: str, device: str = "cpu", grads: bool = True) -> str | None:
    """None when microtorch matches PyTorch on the sample, else what differs."""
    import torch

    tol = TOL[dtype]
    t_leaves, m_leaves = [], []
    t_in = _convert(sample.input, False, device, t_leaves)
    t_args = _convert(list(sample.args), False, device, t_leaves)
    t_kwargs = _convert(dict(sample.kwargs), False, device, t_leaves)
    m_in = _convert(sample.input, True, device, m_leaves)
    m_args = _convert(list(sample.args), True, device, m_leaves)
    m_kwargs = _convert(dict(sample.kwargs), True, device, m_leaves)
    process = sample.output_process_fn_grad
    mprocess = rebound(process)
    wrapper = op.gradcheck_wrapper
    mwrapper = rebound(wrapper)
    fn = mt_function(op)
    with_grad = grads and op.supports_autograd and bool(t_leaves)
    try:
        tout = process(wrapper(op.op, t_in, *t_args, **t_kwargs) if with_grad
                       else op.op(t_in, *t_args, **t_kwargs))
    except Exception as exc:  # PyTorch refuses the sample: microtorch must refuse it too
        try:
            mprocess(fn(m_in, *m_args, **m_kwargs))
        except type(exc):
            return None
        except Exception as mexc:
            return f"PyTorch raised {type(exc).__name__}, microtorch {type(mexc).__name__}"
        return f"PyTorch raised {type(exc).__name__}: {exc}; microtorch did not"
    try:
        mout = mprocess(mwrapper(fn, m_in, *m_args, **m_kwargs) if with_grad
                        else fn(m_in, *m_args, **m_kwargs))
    except Exception as exc:
        return f"microtorch raised {type(exc).__name__}: {exc}"
    touts, mouts = _flatten(tout), _flatten(mout)
    if len(touts) != len(mouts):
        return f"{len(mouts)} outputs, PyTorch {len(touts)}"
    for i, (t, m) in enumerate(zip(touts, mouts)):
        if not isinstance(t, torch.Tensor):
            if t != m:
                return f"output {i}: {m!r} != {t!r}"
            continue
        if tuple(m.shape) != tuple(t.shape):
            return f"output {i}: shape {tuple(m.shape)} != {tuple(t.shape)}"
        if m.dtype.name != str(t.dtype).split(".")[1]:
            return f"output {i}: dtype {m.dtype.name} != {t.dtype}"
        if not np.allclose(_array(m), _array(t), equal_nan=True, **tol):
            err = np.nanmax(np.abs(_array(m) - _array(t))) if t.numel() else 0
            return f"output {i}: values differ (max {err:.2e})"
    if not with_grad:
        return None
    rng = np.random.default_rng(0)
    t_loss, m_loss = 0, 0
    for t, m in zip(touts, mouts):
        if not isinstance(t, torch.Tensor) or not t.requires_grad or not (
                t.dtype.is_floating_point or t.dtype.is_complex):
            continue
        w = rng.standard_normal(tuple(t.shape))
        if t.dtype.is_complex:
            w = w + 1j * rng.standard_normal(tuple(t.shape))
        w = w.astype(_array(t).dtype)
        t_loss = t_loss + (t * torch.tensor(w)).real.sum() if t.dtype.is_complex else \
            t_loss + (t * torch.tensor(w)).sum()
        mw = mt.tensor(w, device=device)
        m_loss = m_loss + (m * mw).real.sum() if t.dtype.is_complex else m_loss + (m * mw).sum()
    if isinstance(t_loss, int):
        return None
    t_grads = torch.autograd.grad(t_loss, t_leaves, allow_unused=True)
    try:
        m_grads = mt.autograd.grad(m_loss, m_leaves, allow_unused=True)
    except Exception as exc:
        return f"backward: microtorch raised {type(exc).__name__}: {exc}"
    for i, (tg, mg) in enumerate(zip(t_grads, m_grads)):
        if tg is None:
            if mg is not None and np.any(_array(mg)):
                return f"gradient {i}: PyTorch none, microtorch non-zero"
            continue
        if mg is None:
            if np.any(tg.resolve_conj().numpy()):
                return f"gradient {i}: missing"
            continue
        if not np.allclose(_array(mg), tg.resolve_conj().numpy(), equal_nan=True, **tol):
            err = np.nanmax(np.abs(_array(mg) - tg.resolve_conj().numpy()))
            return f"gradient {i}: values differ (max {err:.2e})"
    return None


def run_entry(op, dtype: str, device: str = "cpu") -> list[tuple[int, str]]:
    """[(sample index, failure)] for every sample of ``op`` in ``dtype``."""
    import torch

    tdt = getattr(torch, dtype)
    if tdt not in op.dtypes:
        return []
    failures = []
    grads = dtype in ("float64", "complex128")
    samples = op.sample_inputs("cpu", tdt, requires_grad=grads and op.supports_autograd)
    for i, sample in enumerate(samples):
        if device != "cpu" and sample.kwargs.get("driver") not in (None, "gels"):
            continue  # PyTorch's CUDA samples use gels alone (the CPU drivers raise there)
        problem = run_sample(op, sample, dtype, device, grads)
        if problem:
            failures.append((i, problem))
    return failures


def count_samples(op, dtype: str) -> int:
    import torch

    tdt = getattr(torch, dtype)
    if tdt not in op.dtypes:
        return 0
    return sum(1 for _ in op.sample_inputs("cpu", tdt, requires_grad=False))


if __name__ == "__main__":
    import sys
    import warnings

    warnings.simplefilter("ignore")

    dtypes = sys.argv[1:] or ["float64", "complex128", "float32"]
    total = passed = 0
    for op in entries():
        for dtype in dtypes:
            n = count_samples(op, dtype)
            if not n:
                continue
            failures = run_entry(op, dtype)
            total += n
            passed += n - len(failures)
            status = "pass" if not failures else f"{len(failures)} fail"
            print(f"{entry_id(op):32s} {dtype:10s} {n - len(failures):3d}/{n:3d} {status}")
            for i, why in failures[:3]:
                print(f"    sample {i}: {why}")
    print(f"samples: {passed}/{total} pass")
