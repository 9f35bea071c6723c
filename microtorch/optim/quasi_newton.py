"""L-BFGS: the limited-memory quasi-Newton method with PyTorch's closure protocol, history,
tolerances and optional strong-Wolfe line search.

The algorithm works on the parameters as one flat vector. The scalars PyTorch keeps as 0-d
tensors of the parameters' dtype (dot products, step lengths, ``ro``, ``H_diag``) are NumPy
scalars of that dtype here, so a float32 run rounds where PyTorch's does; flat vectors live on
the parameters' device (CuPy arrays on CUDA).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._layout import SPARSE_DATA
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad
from ..backend import aten_arith
from ._rules import loaded_scalar
from .optimizer import Optimizer, ParamsT, _as_real_1d, _to_array_like

__all__ = ["LBFGS"]

# State entries that hold one flat vector (or a list of them) of all parameters' elements.
_FLAT_KEYS = ("d", "prev_flat_grad")
_FLAT_LIST_KEYS = ("old_dirs", "old_stps")
_SCALAR_KEYS = ("t", "H_diag")
_SCALAR_LIST_KEYS = ("ro", "al")


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to
    ``bounds`` (default: the interval between x1 and x2); the midpoint if it has none."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, dot, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """A line search along ``d`` for a step ``t`` meeting the strong Wolfe conditions
    (sufficient decrease ``c1``, curvature ``c2``): bracket, then zoom by cubic interpolation.
    Returns (loss, flat gradient, t, evaluations)."""
    d_norm = abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    bracket = bracket_f = bracket_g = bracket_gtd = None
    while ls_iter < max_ls:  # bracketing phase
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)  # extrapolate within [min_step, 10 t]
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = dot(g_new, d)
        ls_iter += 1
    if ls_iter == max_ls:  # reached the evaluation budget: bracket [0, t]
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:  # zoom phase
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0],
                               bracket[1], bracket_f[1], bracket_gtd[1])
        # Keep the trial point away from the bracket's ends (insufficient progress rule).
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = dot(g_new, d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.copy(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.copy(), gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


def _dense_array(g: Tensor):
    """A gradient's dense array (a sparse gradient made dense, as PyTorch's
    ``p.grad.to_dense()`` in ``_gather_flat_grad``)."""
    return g.to_dense()._data if type(g._data) in SPARSE_DATA else g._data


def _real_numel(p: Tensor) -> int:
    """A parameter's elements in the flat vectors: two per complex element (its real view)."""
    return p.numel() * (2 if p._data.dtype.kind == "c" else 1)


class LBFGS(Optimizer):
    """L-BFGS exactly as ``torch.optim.LBFGS``; ``step(closure)`` requires the closure.

    One ``step`` runs up to ``max_iter`` iterations and ``max_eval`` closure evaluations
    (default ``max_iter * 5 // 4``); it stops early when the largest gradient element is at
    most ``tolerance_grad``, or the step or the loss change is below ``tolerance_change``.
    The last ``history_size`` curvature pairs give the search direction (two-loop
    recursion); ``line_search_fn="strong_wolfe"`` picks the step length, otherwise it is
    ``lr`` (the first iteration scales it by ``min(1, 1 / sum|g|)``).

    The state (of the first parameter, as in PyTorch) has PyTorch's keys: ``func_evals``,
    ``n_iter``, ``d``, ``t``, ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``,
    ``prev_flat_grad``, ``prev_loss`` and, after the second iteration, ``al``. Only one
    parameter group is supported (``add_param_group`` raises ValueError), all parameters on
    one device. ``flat_grads=True`` is accepted as in the other optimizers.
    """

    _ranges = (("lr", None, "learning rate", None),)
    _takes_sparse = True  # (a sparse gradient is read dense, as PyTorch's _gather_flat_grad)

    def __init__(self, params: ParamsT, lr: float = 1, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None, *, flat_grads: bool = False) -> None:
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {"lr": lr, "max_iter": max_iter, "max_eval": max_eval,
                    "tolerance_grad": tolerance_grad, "tolerance_change": tolerance_change,
                    "history_size": history_size, "line_search_fn": line_search_fn}
        super().__init__(params, defaults, flat_grads=flat_grads)
        self._params: list[Tensor] = self.param_groups[0]["params"]
        if len({str(p.device) for p in self._params}) != 1:
            raise ValueError("LBFGS needs all parameters on one device, got "
                             f"{sorted({str(p.device) for p in self._params})}")

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """The one parameter group (a second raises ValueError, as PyTorch's constructor)."""
        if self.param_groups:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(param_group)

    # -- flat views ---------------------------------------------------------------------------
    # A complex parameter takes part as its real view, (re, im) per element, as in PyTorch:
    # its flat gradient has two real elements per complex one, and dot products stay real.
    def _numel(self) -> int:
        return sum(_real_numel(p) for p in self._params)

    def _gather_flat_grad(self):
        """All gradients as one new flat real array (zeros for a parameter without one)."""
        first = self._params[0]
        xp = first._backend.xp
        with first._backend.context():
            views = [_as_real_1d(_dense_array(p._grad).reshape(-1))[0] if p._grad is not None
                     else xp.zeros(_real_numel(p), p._data.real.dtype) for p in self._params]
            return xp.concatenate(views)

    def _add_grad(self, step_size, update) -> None:
        """``param += step_size * update`` (its slice of the flat vector) for each parameter."""
        offset = 0
        for p in self._params:
            (target,) = _as_real_1d(p._data)
            n = target.size
            # (param.add_(update, alpha=step_size): one rounding where PyTorch's kernel fuses)
            aten_arith.add_scaled_(target, update[offset:offset + n].reshape(target.shape),
                                   step_size)
            p._vbox[0] += 1  # an in-place write, as PyTorch's param.add_ counts it
            offset += n

    def _clone_param(self) -> list:
        return [p._data.copy() for p in self._params]

    def _set_param(self, params_data) -> None:
        for p, data in zip(self._params, params_data):
            p._data[...] = data
            p._vbox[0] += 1

    def _scalar(self, value):
        """A 0-d result (NumPy or CuPy) as a NumPy scalar of the parameters' dtype: what
        PyTorch keeps as a 0-d tensor."""
        return self._params[0]._data.real.dtype.type(float(value))

    def _dot(self, a, b):
        """``a.dot(b)`` as a NumPy scalar of the parameters' dtype."""
        return self._scalar(self._params[0]._backend.xp.dot(a, b))

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    # -- step ----------------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run one L-BFGS optimisation (several iterations); ``closure`` re-evaluates the
        model (zero the gradients, compute the loss, ``backward()``) and returns the loss.
        Returns the loss of the first evaluation."""
        if closure is None:
            raise RuntimeError("LBFGS.step() requires a closure that re-evaluates the model "
                               "and returns the loss")
        group = self.param_groups[0]
        line_search_fn = group["line_search_fn"]
        if line_search_fn is not None and line_search_fn != "strong_wolfe":
            raise RuntimeError("only 'strong_wolfe' is supported")

        def evaluate():
            with enable_grad():
                return closure()

        lr = float(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]

        orig_loss = evaluate()
        self._params_with_grads()  # every gradient fits its parameter, before any write
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1

        flat_grad = self._gather_flat_grad()
        if float(abs(flat_grad).max()) <= tolerance_grad:  # already optimal
            return orig_loss

        work = self._unpack_state(state)
        d, t, old_dirs, old_stps = work["d"], work["t"], work["old_dirs"], work["old_stps"]
        ro, h_diag = work["ro"], work["H_diag"]
        prev_flat_grad, prev_loss = work["prev_flat_grad"], state.get("prev_loss")
        al = work["al"]
        dot = self._dot

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:  # steepest descent
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                h_diag = 1
            else:  # the L-BFGS direction from the curvature pairs
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = dot(y, s)
                if ys > 1e-10:  # keep the pair only if the curvature is positive
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / dot(y, y)
                num_old = len(old_dirs)
                if al is None:
                    al = [None] * history_size
                    state["al"] = al  # PyTorch's key order: "al" comes before "d"
                q = -flat_grad  # two-loop recursion
                for i in range(num_old - 1, -1, -1):
                    al[i] = dot(old_stps[i], q) * ro[i]
                    aten_arith.add_scaled_(q, old_dirs[i], -al[i])  # q.add_(.., alpha=-al[i])
                d = r = q * h_diag
                for i in range(num_old):
                    be_i = dot(old_dirs[i], r) * ro[i]
                    aten_arith.add_scaled_(r, old_stps[i], al[i] - be_i)

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.copy()
            else:
                prev_flat_grad[...] = flat_grad
            prev_loss = loss

            if state["n_iter"] == 1:  # the first step length is scaled by the gradient
                t = min(1.0, 1.0 / self._scalar(abs(flat_grad).sum())) * lr
            else:
                t = lr
            gtd = dot(flat_grad, d)
            if gtd > -tolerance_change:  # not a descent direction
                break

            if line_search_fn is not None:
                x_init = self._clone_param()

                def obj_func(x, t, d):
                    return self._directional_evaluate(evaluate, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd, dot,
                    max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = float(abs(flat_grad).max()) <= tolerance_grad
            else:
                self._add_grad(t, d)
                ls_func_evals = 0
                opt_cond = False
                if n_iter != max_iter:  # re-evaluate, unless this was the last iteration
                    loss = float(evaluate())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = float(abs(flat_grad).max()) <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if float(abs(d * t).max()) <= tolerance_change:  # lack of progress
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        self._pack_state(state, d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro,
                         H_diag=h_diag, prev_flat_grad=prev_flat_grad, al=al)
        state["prev_loss"] = prev_loss
        return orig_loss

    # -- state: Tensors in ``self.state`` (as PyTorch), arrays and NumPy scalars while working --
    @staticmethod
    def _unpack_state(state: dict[str, Any]) -> dict[str, Any]:
        def array(v):
            return v._data if isinstance(v, Tensor) else v

        def scalar(v):
            return v._backend.to_numpy(v._data)[()] if isinstance(v, Tensor) else v

        work: dict[str, Any] = {}
        for key in _FLAT_KEYS:
            value = array(state.get(key))
            work[key] = None if value is None else value.copy()
        for key in _FLAT_LIST_KEYS:
            value = state.get(key)
            work[key] = None if value is None else [array(v) for v in value]
        for key in _SCALAR_KEYS:
            work[key] = scalar(state.get(key))
        for key in _SCALAR_LIST_KEYS:
            value = state.get(key)
            work[key] = None if value is None else [scalar(v) for v in value]
        return work

    @staticmethod
    def _pack_state(state: dict[str, Any], **work) -> None:
        def array(v):
            return Tensor._make(v)

        def scalar(v):
            return Tensor._make(np.asarray(v)) if isinstance(v, np.generic) else v

        for key, value in work.items():
            if value is None:
                if key in state or key != "al":
                    state[key] = None
            elif key in _FLAT_KEYS:
                state[key] = array(value)
            elif key in _FLAT_LIST_KEYS:
                state[key] = [array(v) for v in value]
            elif key in _SCALAR_LIST_KEYS:
                state[key] = [scalar(v) for v in value]
            else:
                state[key] = scalar(value)

    def _load_state_value(self, index, key: str, value, p: Tensor):
        """Validated copies of PyTorch's LBFGS entries: flat vectors of all parameters'
        elements (alone or in lists), 0-d scalars (alone or in lists), counters."""
        if key in ("func_evals", "n_iter"):
            return int(value)
        if key == "prev_loss":
            return None if value is None else float(value)
        if key in _FLAT_KEYS:
            return None if value is None else self._load_flat(index, key, value)
        if key in _FLAT_LIST_KEYS:
            return [self._load_flat(index, key, v) for v in value]
        if key in _SCALAR_KEYS:
            return self._load_scalar(index, key, value)
        if key in _SCALAR_LIST_KEYS:
            return [self._load_scalar(index, key, v) for v in value]
        raise ValueError(f"state of parameter {index!r} has the unknown LBFGS entry {key!r}")

    def _load_flat(self, index, key: str, value) -> Tensor:
        shape = tuple(getattr(value, "shape", np.shape(value)))
        if shape != (self._numel(),):
            raise ValueError(f"state {key!r} of parameter {index!r} has shape {list(shape)}, "
                             f"but the parameters have {self._numel()} elements in all")
        arr = _to_array_like(value, self._params[0])
        return Tensor._make(arr.real.copy() if arr.dtype.kind == "c" else arr)  # (real views)

    def _load_scalar(self, index, key: str, value):
        if value is None or isinstance(value, (int, float)):
            return value
        arr = loaded_scalar(index, key, value)
        return Tensor._make(arr.astype(self._params[0]._data.real.dtype).copy())
