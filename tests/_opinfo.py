"""Run PyTorch's own OpInfo samples (``op_db``) through a microtorch op and compare values,
dtypes, shapes and input gradients with PyTorch's on the same samples.

``check_samples(name, mt_op, device, dtype)`` converts every ``SampleInput`` of the OpInfo
``name`` (tensors, lists and tuples of them, dtypes) to microtorch, calls ``mt_op(input, *args,
**kwargs)`` and PyTorch's ``OpInfo.op`` on the originals, and asserts equal results; for
floating samples of ops PyTorch differentiates it also backpropagates the same weighted sum
of the outputs through both and compares the gradients of every input that requires one.
"""

from __future__ import annotations

import functools

import numpy as np

import microtorch as mt

torch = __import__("torch")

TOL = {"float64": dict(rtol=1e-10, atol=1e-12),
       # float32: PyTorch's vectorised kernels (SLEEF) and NumPy's loops round transcendental
       # functions differently in the last bits; a few ulps, not a tuned number.
       "float32": dict(rtol=2e-6, atol=1e-6)}
TOL["complex128"], TOL["complex64"] = TOL["float64"], TOL["float32"]


@functools.cache
def opinfo(name: str, variant: str = ""):
    """The OpInfo of op_db called ``name`` (with ``variant_test_name`` ``variant``)."""
    from torch.testing._internal.common_methods_invocations import op_db

    for op in op_db:
        if op.name == name and op.variant_test_name == variant:
            return op
    raise LookupError(f"no OpInfo {name!r} ({variant!r})")


def to_mt(value, device: str, leaves: list):
    """``value`` with every torch tensor converted to microtorch (recording, in ``leaves``,
    (microtorch, torch) pairs of the tensors that require grad), and torch dtypes too."""
    if isinstance(value, torch.Tensor):
        arr = value.detach().cpu().numpy()
        t = mt.tensor(arr, device=device)
        if value.requires_grad:
            t.requires_grad_(True)
            leaves.append((t, value))
        return t
    if isinstance(value, torch.dtype):
        return getattr(mt, str(value).split(".")[1])
    if isinstance(value, (list, tuple)):
        out = [to_mt(v, device, leaves) for v in value]
        return type(value)(out) if not hasattr(value, "_fields") else type(value)(*out)
    if isinstance(value, dict):
        return {k: to_mt(v, device, leaves) for k, v in value.items()}
    return value


def _flat(value) -> list:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    return [value]


def assert_same(out, tout, dtype: str, what: str = "", tol=None) -> None:
    """Equal shapes, dtypes and values (NaN where PyTorch has NaN) of nested results;
    ``tol``: tolerances by dtype name, over the defaults."""
    outs, touts = _flat(out), _flat(tout)
    assert len(outs) == len(touts), what
    for a, b in zip(outs, touts):
        if not isinstance(b, torch.Tensor):
            assert a == b or (a != a and b != b), f"{what}: {a} != {b}"
            continue
        assert isinstance(a, mt.Tensor), f"{what}: {type(a)}"
        assert tuple(a.shape) == tuple(b.shape), f"{what}: shape {a.shape} != {b.shape}"
        assert a.dtype.name == str(b.dtype).split(".")[1], f"{what}: {a.dtype} != {b.dtype}"
        got = a.detach().cpu().numpy()
        want = b.detach().numpy()
        if want.dtype.kind in "fc":  # (the tolerance of the result's dtype)
            name = str(b.dtype).split(".")[1]
            limits = (tol or {}).get(name) or TOL.get(name, TOL["float32"])
            np.testing.assert_allclose(got, want, equal_nan=True, err_msg=what, **limits)
        else:
            np.testing.assert_array_equal(got, want, err_msg=what)


def check_samples(name: str, mt_op, device: str, dtype: str = "float64", variant: str = "",
                  grad: bool = True, skip=None, torch_op=None, tol=None) -> int:
    """Compare ``mt_op`` with PyTorch on every sample of OpInfo ``name``; returns how many
    samples ran. ``skip(sample)`` leaves out samples the caller documents as unsupported;
    ``tol`` ({dtype name: assert_allclose kwargs}) widens the defaults where a test says why."""
    info = opinfo(name, variant)
    tdtype = getattr(torch, dtype)
    want_grad = grad and info.supports_autograd and tdtype.is_floating_point
    run = 0
    for k, sample in enumerate(info.sample_inputs("cpu", tdtype, requires_grad=want_grad)):
        if skip is not None and skip(sample):
            continue
        leaves: list = []
        args = to_mt((sample.input, *sample.args), device, leaves)
        kwargs = to_mt(sample.kwargs, device, leaves)
        what = f"{name} sample {k}: {sample}"[:400]
        tout = (torch_op or info.op)(sample.input, *sample.args, **sample.kwargs)
        out = mt_op(*args, **kwargs)
        assert_same(out, tout, dtype, what, tol)
        run += 1
        touts = [t for t in _flat(tout) if isinstance(t, torch.Tensor) and t.requires_grad]
        if not want_grad or not touts:
            continue
        outs = [o for o, t in zip(_flat(out), _flat(tout))
                if isinstance(t, torch.Tensor) and t.requires_grad]
        rng = np.random.default_rng(k)
        weights = [rng.standard_normal(tuple(t.shape)) for t in touts]
        tloss = sum((t * torch.tensor(w, dtype=t.dtype)).sum() for t, w in zip(touts, weights))
        loss = sum((o * mt.tensor(w, dtype=o.dtype, device=device)).sum()
                   for o, w in zip(outs, weights))
        tgrads = torch.autograd.grad(tloss, [t for _, t in leaves], allow_unused=True)
        grads = mt.autograd.grad(loss, [m for m, _ in leaves], allow_unused=True)
        for i, (g, tg) in enumerate(zip(grads, tgrads)):
            if tg is None:
                assert g is None or not np.any(g.cpu().numpy()), f"{what}: grad {i}"
                continue
            assert g is not None, f"{what}: no gradient for input {i}"
            assert_same(g, tg, dtype, f"{what}: gradient of input {i}", tol)
    return run
