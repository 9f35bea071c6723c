"""Run one OpInfo entry's samples on microtorch and PyTorch and compare them.

For one entry, dtype and device, ``run_entry`` makes the OpInfo's samples (torch seeded first,
so every run gives the same samples), converts each to microtorch, calls both ops and checks,
per sample and variant (``op`` = the function, ``method``, ``inplace``, ``out``):

- ``error``: microtorch raised where PyTorch returned (for the in-place and ``out=`` forms
  also: returned where PyTorch raised, or raised another exception class);
- ``value``: the results differ in structure, shape, dtype or values (NaN in the same places);
- ``grad``: the gradients of a weighted sum of the float outputs (one fixed random weight per
  output element, the same in both) differ, for any input tensor that requires grad; a sparse
  output enters the sum through ``to_dense()``, whose gradient keeps the output's pattern (the
  masked semantics of PyTorch's ``gradcheck(masked=True)``: ``(sparse * w).sum()`` would give
  a sparse input the dense gradient of the CSR sum's backward instead);
- ``convert``: a sample holds a value microtorch has no counterpart for.

Gradients go through the entry's ``gradcheck_wrapper`` where it has one (the projections
PyTorch's own gradient tests apply: a Hermitian input for ``eigh``, a triangular one for
``cholesky_inverse``), on both sides. The outputs of decompositions defined only up to a gauge
(``catalog.gauge_defined``: the signs of singular vectors and eigenvectors) are compared after
the sample's ``output_process_fn_grad``, the gauge-invariant form PyTorch's tests use.

PyTorch on the CPU is the oracle on every device; a sample PyTorch itself rejects is dropped,
and so is one its generator makes for the CPU alone (``catalog.made_for``).
A float32 result outside the tolerance still passes when it lies no farther from PyTorch's
float64 computation of the same sample than twice PyTorch's float32 result does: PyTorch's
own rule for comparing two implementations (``_ref_test_helper`` in its test_ops.py), with a
factor 2 since two kernels that round differently but equally well are each the farther one
half of the time (PyTorch's rule has none, with a TODO to add a tolerance; it applies it to
references that mostly compute the same way as the kernel). PyTorch's float32 result is one
rounding among several (its distance moves with its SIMD level and thread count): where the
result as configured is the nearer, the farthest of PyTorch's runs in its other configurations
on this machine is the yardstick (``spread``).
Random ops (``catalog.is_random``) are compared by value on the CPU, where microtorch replays
PyTorch's generator after the same seed, and by shape and dtype elsewhere (PyTorch's CUDA
stream differs from its CPU stream too); ops whose output PyTorch calls not comparable
(``catalog.comparable``: uninitialised memory) by shape and dtype everywhere.
"""

from __future__ import annotations

import dataclasses
import random
import warnings

import catalog
import numpy as np
import porting
import spread
import tolerances
import torch
from compare import Mismatch, compare, distance, is_sparse, leaves, mt_numpy

import microtorch as mt

PRECISE_FACTOR = 2.0  # see the module docstring


@dataclasses.dataclass
class Failure:
    """One failed check of one sample."""

    sample: int
    check: str  # "<variant>.<kind>", e.g. "op.grad", "inplace.error"
    message: str

    def __str__(self) -> str:
        return f"sample {self.sample} {self.check}: {self.message}"


@dataclasses.dataclass
class EntryRun:
    """The outcome of one entry x dtype x device: samples run, failures."""

    samples: int = 0
    failures: list[Failure] = dataclasses.field(default_factory=list)

    @property
    def passed(self) -> int:
        return self.samples - len({f.sample for f in self.failures})


def _seed_all(k: int) -> None:
    # torch's CPU generator alone: torch.manual_seed also queues a CUDA seed call with a
    # formatted stack trace each time, a millisecond that the tier would pay per sample.
    torch.default_generator.manual_seed(k)
    random.seed(k)
    np.random.seed(k)


def _error_message(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200] if text else ''}"


def _call(fn, args, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _weights(outs: list) -> list[np.ndarray]:
    # One fixed weight per output element: a seeded draw independent of both frameworks.
    rng = np.random.default_rng(1234)
    return [rng.standard_normal(tuple(o.shape)).astype(porting.to_numpy(o).dtype) for o in outs]


def _grad_outputs(out) -> list:
    """The float outputs that require grad, a sparse one as its dense tensor (see the module
    docstring), in either framework."""
    return [t.to_dense() if is_sparse(t) else t for t in leaves(out)
            if t.requires_grad and t.dtype.is_floating_point]


def _torch_grads(sample_values, process, out, weights=None):
    """PyTorch's gradients of sum(w * output) for the sample's tensors that require grad, or
    None when there is nothing to differentiate; also the weights used."""
    inputs = [t for t in leaves(list(sample_values)) if t.requires_grad]
    outs = _grad_outputs(process(out))
    if not inputs or not outs:
        return None, None
    weights = _weights(outs) if weights is None else weights
    loss = sum((o * torch.from_numpy(w.astype(porting.to_numpy(o).dtype))).sum()
               for o, w in zip(outs, weights))
    return torch.autograd.grad(loss, inputs, allow_unused=True), weights


def _widened(sample):
    """The sample's values with every float32 tensor as a float64 copy (requires_grad kept;
    a tensor passed twice stays one tensor): PyTorch's "precise" computation of the sample."""
    memo: dict = {}

    def widen(obj):
        if isinstance(obj, torch.Tensor):
            if id(obj) not in memo:
                t = obj.detach()
                t = (t.double() if t.dtype == torch.float32 else t.clone())
                memo[id(obj)] = (obj, t.requires_grad_(obj.requires_grad))
            return memo[id(obj)][1]
        if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
            return type(obj)(widen(v) for v in obj)
        if isinstance(obj, dict):
            return {k: widen(v) for k, v in obj.items()}
        return obj

    return widen(sample.input), widen(list(sample.args)), widen(dict(sample.kwargs))


def _detached(sample):
    """The sample's values with every tensor cloned and detached (shared tensors stay shared)."""
    memo: dict = {}

    def clone(obj):
        if isinstance(obj, torch.Tensor):
            if id(obj) not in memo:
                memo[id(obj)] = (obj, obj.detach().clone())
            return memo[id(obj)][1]
        if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
            return type(obj)(clone(v) for v in obj)
        if isinstance(obj, dict):
            return {k: clone(v) for k, v in obj.items()}
        return obj

    return clone(sample.input), clone(list(sample.args)), clone(dict(sample.kwargs))


def _zeros_like(ref):
    """Zero-filled tensors of ``ref``'s shapes, dtypes and layouts (a tensor or a tuple of
    them; a sparse one with no entries)."""
    if isinstance(ref, torch.Tensor):
        return torch.zeros(ref.shape, dtype=ref.dtype, layout=ref.layout)
    if isinstance(ref, (tuple, list)) and ref and all(isinstance(r, torch.Tensor) for r in ref):
        return tuple(torch.zeros(r.shape, dtype=r.dtype, layout=r.layout) for r in ref)
    return None


class _Sample:
    """One sample's state shared by its checks: the sample, its index, PyTorch's results."""

    def __init__(self, index: int, sample) -> None:
        self.index, self.sample = index, sample
        self.wide = self.precise = self.precise_grads = self.weights = None


class _Runner:
    """Runs the checks of one entry x dtype x device, sample by sample."""

    def __init__(self, op, dtype: torch.dtype, device: str) -> None:
        self.op, self.dtype, self.device = op, dtype, device
        self.tol = tolerances.for_op(op)
        self.random = catalog.is_random(op)
        self.values = catalog.comparable(op) and (device == "cpu" or not self.random)
        self.grad = op.supports_autograd and dtype.is_floating_point
        self.fn = porting.op_function(op)
        self.method = None
        if op.method_variant is not None and op.method_variant is not op.op:
            self.method = porting.variant_function(op.method_variant)
        self.inplace = porting.variant_function(op.inplace_variant)
        self.wrapper = None if catalog.default_wrapper(op) else op.gradcheck_wrapper
        self.gauge = catalog.gauge_defined(op)
        self.run = EntryRun()

    def seed(self, index: int) -> None:
        """The same seed in both frameworks before each call of a random op."""
        if self.random:
            torch.default_generator.manual_seed(index)
            mt.manual_seed(index)

    def fail(self, s: _Sample, check: str, message: str) -> None:
        self.run.failures.append(Failure(s.index, check, message))

    # -- float32 results: PyTorch's "no farther from the precise result" rule -------------------
    def precise_out(self, s: _Sample, wrapped: bool = False):
        """PyTorch's result of the sample with its float32 tensors widened to float64 (through
        the entry's gradcheck_wrapper when ``wrapped``, as the gradients are taken)."""
        if s.wide is None:
            s.wide, s.precise = _widened(s.sample), {}
        wrapped = wrapped and self.wrapper is not None
        if wrapped not in s.precise:
            args = (s.wide[0], *s.wide[1])
            try:
                self.seed(s.index)
                s.precise[wrapped] = (_call(self.wrapper, (self.op.op, *args), s.wide[2])
                                      if wrapped else _call(self.op.op, args, s.wide[2]))
            except Exception:  # no precise computation: the tolerance alone decides
                s.precise[wrapped] = None
        return s.precise[wrapped]

    def precise_value(self, s: _Sample):
        """The precise result as the values are compared (gauge-invariant where they are)."""
        out = self.precise_out(s)
        if out is not None and self.gauge:
            out = s.sample.output_process_fn_grad(out)
        return out

    def precise_grad(self, s: _Sample, k: int):
        """PyTorch's float64 gradient of input ``k`` (same weights as the float32 check)."""
        if s.precise_grads is None and self.precise_out(s, wrapped=True) is not None:
            try:
                s.precise_grads, _ = _torch_grads(s.wide, s.sample.output_process_fn_grad,
                                                  s.precise[self.wrapper is not None],
                                                  s.weights)
            except Exception:
                s.precise_grads = None
            if s.precise_grads is None:
                s.precise_grads = ()
        return s.precise_grads[k] if s.precise_grads else None

    def close_enough(self, s: _Sample, got, want, precise_of, grad: int | None = None) -> bool:
        """A float32 ``got`` outside the tolerance is accepted when its distance from the
        precise result is at most PyTorch's (structure, shapes and dtypes must match): its
        result as configured, else the farthest of its runs in its other configurations on
        this machine (``spread``). ``grad``: ``got`` is the gradient of input ``grad``."""
        if self.dtype != torch.float32 or not self.values:
            return False
        try:
            compare(got, want, self.tol, values=False)
        except Mismatch:
            return False
        precise = precise_of(s)
        if precise is None:
            return False
        ours = distance(got, precise)
        if ours <= PRECISE_FACTOR * distance(want, precise):
            return True
        try:
            runs = spread.elsewhere(catalog.entry_id(self.op), "float32", s.index)
        except RuntimeError:  # (a worker failed: the first judgement stands)
            return False
        theirs = [distance(r["value"] if grad is None else r["grads"][grad], precise)
                  for r in runs if grad is None or r["grads"] is not None]
        return bool(theirs) and bool(ours <= PRECISE_FACTOR * max(theirs))

    def outcome(self, s: _Sample, variant: str, got, want) -> None:
        if self.gauge:  # compare what the decomposition defines, not its arbitrary signs
            try:
                want = s.sample.output_process_fn_grad(want)
                got = porting.to_mt(s.sample.output_process_fn_grad, "cpu", {})(got)
            except Exception as e:
                self.fail(s, f"{variant}.value", _error_message(e))
                return
        try:
            compare(got, want, self.tol, self.values)
        except Mismatch as e:
            if not self.close_enough(s, got, want, self.precise_value):
                self.fail(s, f"{variant}.value", str(e))
        except Exception as e:  # a result microtorch cannot even describe (shape, dtype)
            self.fail(s, f"{variant}.value", _error_message(e))

    # -- the variants ------------------------------------------------------------------------
    def sample(self, index: int, sample) -> None:
        s = _Sample(index, sample)
        memo: dict = {}
        try:
            m_in, m_args, m_kwargs = porting.to_mt(
                (sample.input, list(sample.args), dict(sample.kwargs)), self.device, memo)
        except porting.Unportable as e:
            self.run.samples += 1
            self.fail(s, "op.convert", str(e))
            return
        self.seed(index)
        try:
            t_out = _call(self.op.op, (sample.input, *sample.args), sample.kwargs)
        except Exception:  # PyTorch rejects its own sample: nothing to compare
            return
        self.run.samples += 1
        self.seed(index)
        try:
            m_out = _call(self.fn, (m_in, *m_args), m_kwargs)
        except Exception as e:
            self.fail(s, "op.error", _error_message(e))
        else:
            self.outcome(s, "op", m_out, t_out)
            if self.grad:
                self.check_grad(s, t_out, m_out, (m_in, m_args, m_kwargs), memo)
        if self.method is not None:
            self.variant(s, "method", self.op.method_variant, self.method)
        if self.inplace is not None:
            self.variant(s, "inplace", self.op.inplace_variant, self.inplace)
        if self.op.supports_out:
            self.out(s, t_out)

    def check_grad(self, s: _Sample, t_out, m_out, m_values, memo: dict) -> None:
        """Gradients of sum(w * output) for every input tensor that requires grad (through
        the entry's gradcheck_wrapper where it has one)."""
        sample = s.sample
        values = (sample.input, sample.args, sample.kwargs)
        if self.wrapper is not None:
            m_in, m_args, m_kwargs = m_values
            self.seed(s.index)
            try:
                t_out = _call(self.wrapper, (self.op.op, sample.input, *sample.args),
                              sample.kwargs)
            except Exception:  # PyTorch's wrapper refuses its own sample
                return
            self.seed(s.index)
            try:
                m_out = _call(porting.translate(self.wrapper), (self.fn, m_in, *m_args), m_kwargs)
            except Exception as e:
                self.fail(s, "op.grad", _error_message(e))
                return
        try:
            t_grads, s.weights = _torch_grads(values, sample.output_process_fn_grad, t_out)
        except Exception:  # PyTorch cannot differentiate its own sample
            return
        if t_grads is None:
            return
        try:
            m_proc = porting.to_mt(sample.output_process_fn_grad, "cpu", {})(m_out)
            m_outs = _grad_outputs(m_proc)
            if len(m_outs) != len(s.weights):
                raise Mismatch(f"{len(m_outs)} outputs require grad, PyTorch "
                               f"{len(s.weights)}")
            m_inputs = [memo[id(t)][1] for t in leaves(list(values)) if t.requires_grad]
            dev = m_outs[0].device
            loss = sum((o * mt.tensor(w, device=dev)).sum() for o, w in zip(m_outs, s.weights))
            m_grads = mt.autograd.grad(loss, m_inputs, allow_unused=True)
            self.compare_grads(s, m_grads, t_grads)
        except Mismatch as e:
            self.fail(s, "op.grad", str(e))
        except Exception as e:
            self.fail(s, "op.grad", _error_message(e))

    def compare_grads(self, s: _Sample, m_grads, t_grads) -> None:
        for k, (mg, tg) in enumerate(zip(m_grads, t_grads)):
            where = f"grad of input {k}"
            if tg is None:
                if mg is not None and np.any(mt_numpy(mg)):
                    raise Mismatch(f"{where}: nonzero where PyTorch has none")
            elif mg is None:
                if np.any(porting.to_numpy(tg)):
                    raise Mismatch(f"{where}: none, PyTorch nonzero")
            else:
                try:
                    compare(mg, tg, self.tol, self.values, where)
                except Mismatch:
                    if not self.close_enough(s, mg, tg,
                                             lambda s, k=k: self.precise_grad(s, k), k):
                        raise

    def errors_differ(self, s: _Sample, name: str, t_err, m_err) -> bool:
        """Record a failure when exactly one side raised, or the two raised different classes."""
        if t_err is None and m_err is None:
            return False
        if t_err is None:
            message = _error_message(m_err)
        elif m_err is None:
            message = f"returns where PyTorch raises {_error_message(t_err)}"
        elif type(t_err) is not type(m_err):
            message = f"{_error_message(m_err)}, PyTorch {_error_message(t_err)}"
        else:
            return False
        self.fail(s, f"{name}.error", message)
        return True

    def both(self, s: _Sample, t_call, m_call):
        """Run PyTorch's and microtorch's call after the same seed: results and exceptions."""
        results, errors = [None, None], [None, None]
        for k, call in enumerate((t_call, m_call)):
            self.seed(s.index)
            try:
                results[k] = call()
            except Exception as e:
                errors[k] = e
        return results, errors

    def variant(self, s: _Sample, name: str, t_fn, m_fn) -> None:
        """The method or in-place form on fresh, grad-free copies of the sample."""
        t_in, t_args, t_kwargs = _detached(s.sample)
        m_in, m_args, m_kwargs = porting.to_mt((t_in, t_args, t_kwargs), self.device, {})
        (t_out, m_out), (t_err, m_err) = self.both(
            s, lambda: _call(t_fn, (t_in, *t_args), t_kwargs),
            lambda: _call(m_fn, (m_in, *m_args), m_kwargs))
        if self.errors_differ(s, name, t_err, m_err) or t_err is not None:
            return
        self.outcome(s, name, m_out, t_out)
        if name == "inplace":
            if t_out is t_in and m_out is not m_in:
                self.fail(s, "inplace.value", "does not return its input")
            self.outcome(s, name, m_in, t_in)

    def out(self, s: _Sample, t_ref) -> None:
        """``out=``: where microtorch's function takes it, into tensors of the result's form."""
        t_in, t_args, t_kwargs = _detached(s.sample)
        t_out = _zeros_like(t_ref)
        if t_out is None:
            return
        memo: dict = {}
        m_in, m_args, m_kwargs = porting.to_mt((t_in, t_args, t_kwargs), self.device, memo)
        try:
            m_out = porting.to_mt(t_out, self.device, memo)
        except porting.Unportable:
            return  # a result dtype microtorch lacks (hash_tensor's uint64): no out= to test
        (t_res, m_res), (t_err, m_err) = self.both(
            s, lambda: _call(self.op.op, (t_in, *t_args), {**t_kwargs, "out": t_out}),
            lambda: _call(self.fn, (m_in, *m_args), {**m_kwargs, "out": m_out}))
        if isinstance(m_err, TypeError) and "'out'" in str(m_err):
            return  # microtorch's function has no out=: not a form it offers
        if self.errors_differ(s, "out", t_err, m_err) or t_err is not None:
            return
        self.outcome(s, "out", m_res, t_res)
        self.outcome(s, "out", m_out, t_out)


def samples_of(op, dtype: torch.dtype, grad: bool) -> list:
    """The entry's samples in ``dtype`` (requiring grad when ``grad``), the same every call:
    one seed before they are made, not torch.testing's per-sample seed (a hash of the
    calling test function's name, read off the stack)."""
    _seed_all(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(op.sample_inputs("cpu", dtype, requires_grad=grad, set_seed=False))


def run_entry(op, dtype: torch.dtype, device: str) -> EntryRun:
    """Every sample of ``op`` in ``dtype`` on ``device``, checked against PyTorch on the CPU."""
    runner = _Runner(op, dtype, device)
    for index, sample in enumerate(samples_of(op, dtype, runner.grad)):
        if catalog.made_for(sample, device):
            runner.sample(index, sample)
    return runner.run
