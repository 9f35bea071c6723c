"""PyTorch's fused multiply-adds, replayed bit for bit (``backend.aten_arith``).

PyTorch's AVX2 and AVX512 CPU kernels round ``add``/``sub`` with ``alpha``, ``lerp`` and
``addcmul`` once; its DEFAULT build rounds the product and the sum. Every optimizer applies
its update through these kernels, so a step rounded the other way drifts from PyTorch's in
some elements every step. The tests compare bits with PyTorch on the same inputs: in this
process (the CPU's own build), and in subprocesses at the other levels this CPU can run.

Optimizers that take a square root are compared where MKL runs its AVX2 kernels
(``MKL_ENABLE_INSTRUCTIONS=AVX2``), in float32: PyTorch's ``sqrt`` goes through MKL's vector
math, whose float32 AVX-512 and SSE kernels are not correctly rounded (measured: 620 and
19,065 of 100,000 random inputs one ulp off), while its AVX2 kernel and NumPy round
correctly; its float64 kernels are one ulp off in some elements in every family.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import microtorch as mt
from microtorch.backend import aten_arith, compiled, cpu_capability, exact_fma

torch = pytest.importorskip("torch")

ALPHAS = (0.3, -2.7, 1e-5, 3)


def _pair(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for _ in range(2)]


def _same_bits(ours, theirs) -> None:
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    differ = ours.view(np.uint8) != theirs.view(np.uint8)
    assert not differ.any(), f"{int(differ.reshape(ours.size, -1).any(1).sum())} elements differ"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("op", ["add", "sub"])
def test_add_and_sub_with_alpha_round_as_pytorch(op, alpha, dtype) -> None:
    a, b = _pair((1003,), dtype)
    _same_bits(getattr(mt, op)(mt.tensor(a), mt.tensor(b), alpha=alpha).numpy(),
               getattr(torch, op)(torch.tensor(a), torch.tensor(b), alpha=alpha).numpy())
    _same_bits(getattr(mt.tensor(a), op + "_")(mt.tensor(b), alpha=alpha).numpy(),
               getattr(torch.tensor(a), op + "_")(torch.tensor(b), alpha=alpha).numpy())


@pytest.mark.parametrize("case", ["broadcast", "number", "strided", "large", "0-d"])
def test_add_alpha_shapes_round_as_pytorch(case) -> None:
    a, b = _pair((300, 400))
    if case == "broadcast":
        a, b = a, b[0]
    elif case == "number":
        b = 1.3
    elif case == "strided":
        a, b = a[:, ::3], b.T[::3, :300].T
    elif case == "0-d":
        a, b = a, np.float32(0.7)
    mb = mt.tensor(b) if isinstance(b, np.ndarray) else b
    tb = torch.tensor(b) if isinstance(b, np.ndarray) else b
    if case == "0-d":
        mb, tb = mt.tensor(b), torch.tensor(b)
    if case == "number":  # (PyTorch's short tail after a number other rounds its own way)
        a = a[:, :256]
    _same_bits(mt.add(mt.tensor(a), mb, alpha=0.1).numpy(),
               torch.add(torch.tensor(a), tb, alpha=0.1).numpy())
    ours = mt.tensor(a)
    ours.add_(mb, alpha=-0.37)  # (large contiguous arrays: the compiled FMA kernel)
    _same_bits(ours.numpy(), torch.tensor(a).add_(tb, alpha=-0.37).numpy())


@pytest.mark.parametrize("weight", [0.1, 0.7, -0.3, 1.5, "tensor"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lerp_rounds_as_pytorch(weight, dtype) -> None:
    a, b = _pair((2000,), dtype, seed=1)
    if weight == "tensor":
        w = (np.random.default_rng(2).random(2000) * 3 - 1).astype(dtype)
        ours = mt.lerp(mt.tensor(a), mt.tensor(b), mt.tensor(w))
        theirs = torch.lerp(torch.tensor(a), torch.tensor(b), torch.tensor(w))
    else:
        ours = mt.lerp(mt.tensor(a), mt.tensor(b), weight)
        theirs = torch.lerp(torch.tensor(a), torch.tensor(b), weight)
    _same_bits(ours.numpy(), theirs.numpy())


def test_integer_alpha_keeps_pytorch_checks() -> None:
    # sub is add with -alpha: the negation is what must fit (int8 takes 128, refuses -128)
    a, b = [1, 2], [3, 4]
    assert mt.sub(mt.tensor(a, dtype=mt.int8), mt.tensor(b, dtype=mt.int8),
                  alpha=128).tolist() == torch.sub(torch.tensor(a, dtype=torch.int8),
                                                   torch.tensor(b, dtype=torch.int8),
                                                   alpha=128).tolist()
    with pytest.raises(RuntimeError, match="without overflow"):
        mt.sub(mt.tensor(a, dtype=mt.int8), mt.tensor(b, dtype=mt.int8), alpha=-128)
    with pytest.raises(RuntimeError, match="Boolean alpha"):
        mt.tensor([1.0]).sub_(mt.tensor([1.0]), alpha=True)


def test_fused_kernel_and_emulation_give_the_same_bits() -> None:
    # aten_arith.add_scaled_ takes numba's llvm.fma on large contiguous arrays and the NumPy
    # emulation elsewhere: one rounding both ways.
    if compiled.kernels() is None or not aten_arith.fuses(np.zeros(1, np.float32)):
        pytest.skip("numba unavailable or PyTorch's DEFAULT build here (nothing fused)")
    for dtype in (np.float32, np.float64):
        a, b = _pair((compiled.MIN_ELEMENTS + 5,), dtype, seed=3)
        kernel, emulated = a.copy(), a.copy()
        aten_arith.add_scaled_(kernel, b, -0.013)
        emulated[...] = exact_fma.fma(b, np.asarray(-0.013, dtype), emulated)
        _same_bits(kernel, emulated)


# Optimizers and options compared step by step with PyTorch's; those without a square root
# run in this process, the others where MKL's sqrt rounds correctly (module docstring).
SQRT_FREE = [("SGD", {"lr": 0.013}), ("SGD", {"lr": 0.013, "momentum": 0.9}),
             ("SGD", {"lr": 0.013, "momentum": 0.9, "nesterov": True}),
             ("SGD", {"lr": 0.013, "momentum": 0.9, "dampening": 0.1}),
             ("SGD", {"lr": 0.013, "weight_decay": 0.01, "maximize": True}),
             ("Rprop", {}), ("ASGD", {}), ("ASGD", {"t0": 1, "weight_decay": 0.01}),
             ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 2, "maximize": True}),
             ("ASGD", {"lr": 0.05, "lambd": 0.3, "alpha": 1.5})]
# (with foreach=True each is compared with PyTorch's multi-tensor step: for ASGD, NAdam and
# RAdam it is another formula, rounded differently)
WITH_SQRT = [("Adam", {}), ("Adam", {"weight_decay": 0.01}), ("Adam", {"amsgrad": True}),
             ("AdamW", {}), ("Adamax", {}), ("RMSprop", {}),
             ("RMSprop", {"momentum": 0.9}), ("RMSprop", {"momentum": 0.9, "centered": True}),
             ("RMSprop", {"centered": True, "weight_decay": 0.01, "maximize": True}),
             ("Adagrad", {}), ("Adagrad", {"weight_decay": 0.01, "lr_decay": 0.01}),
             ("Adagrad", {"maximize": True, "lr": 0.3}),
             ("Adadelta", {}), ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.01}),
             ("NAdam", {}), ("NAdam", {"decoupled_weight_decay": True, "weight_decay": 0.01}),
             ("NAdam", {"maximize": True, "momentum_decay": 0.01, "betas": (0.8, 0.9)}),
             ("RAdam", {}), ("RAdam", {"weight_decay": 0.01}),
             ("RAdam", {"maximize": True, "betas": (0.5, 0.6)})]


def _steps(lib, name, options, foreach, dtype="float32"):
    """The parameter after four steps of ``name`` with the same gradients."""
    rng = np.random.default_rng(5)
    p0 = rng.standard_normal(4099).astype(dtype)
    grads = [(rng.standard_normal(4099) * (k + 1) + k).astype(dtype) for k in range(4)]
    p = lib.tensor(p0.copy()).requires_grad_()
    opt = getattr(lib.optim, name)([p], foreach=foreach, **options)
    for g in grads:
        p.grad = lib.tensor(g.copy())
        opt.step()
    return p.detach().numpy().copy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, options", SQRT_FREE)
def test_sqrt_free_optimizer_steps_are_pytorch_bits(name, options, dtype) -> None:
    for foreach in (False, True):
        _same_bits(_steps(mt, name, options, foreach, dtype),
                   _steps(torch, name, options, foreach, dtype))


_SUBPROCESS = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    import microtorch, torch
    from test_fused_rounding import _steps, _same_bits, {cases}
    failed = []
    for name, options in {cases}:
        for dtype in {dtypes}:
            for foreach in (False, True):
                try:
                    _same_bits(_steps(microtorch, name, options, foreach, dtype),
                               _steps(torch, name, options, foreach, dtype))
                except AssertionError as e:
                    failed.append(f"{{name}} {{options}} {{dtype}} foreach={{foreach}}: {{e}}")
    print("\\n".join(failed) or "ok")
""")


def _run_level(env: dict, cases: str, dtypes=("float32", "float64")) -> str:
    code = _SUBPROCESS.format(tests=os.path.dirname(__file__), cases=cases, dtypes=dtypes)
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


def test_optimizers_with_a_square_root_are_pytorch_bits_with_mkl_avx2() -> None:
    if cpu_capability.aten() == "DEFAULT":
        pytest.skip("this CPU has no AVX2: MKL's sqrt is not correctly rounded here")
    # (float32 only: MKL's float64 sqrt is one ulp off in some elements in every kernel
    # family, measured 623 of 100,000 with AVX-512 and 1,434 with AVX2 or SSE)
    assert _run_level({"MKL_ENABLE_INSTRUCTIONS": "AVX2"}, "WITH_SQRT", ("float32",)) == "ok"


def test_default_build_rounds_twice_as_pytorch_does() -> None:
    assert _run_level({"ATEN_CPU_CAPABILITY": "default"}, "SQRT_FREE") == "ok"
    if cpu_capability.aten() != "DEFAULT":  # (MKL's AVX2 sqrt: see the module docstring)
        assert _run_level({"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
                          "WITH_SQRT", ("float32",)) == "ok"


def test_muon_rounds_as_pytorch_at_each_level() -> None:
    # Muon's lerp and update go through aten_arith too: fused in the AVX builds, twice in the
    # DEFAULT one (its bit-exact cases are test_muon's small matrices)
    test = os.path.join(os.path.dirname(__file__), "test_muon.py")
    for env in ({}, {"ATEN_CPU_CAPABILITY": "default"}):
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              f"{test}::test_muon_bit_exact_on_small_matrices"],
                             env={**os.environ, **env}, capture_output=True, text=True,
                             timeout=600, cwd=os.path.dirname(test))
        assert out.returncode == 0, (env, out.stdout[-2000:])
