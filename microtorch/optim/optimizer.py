"""The Optimizer base class: parameter groups, per-parameter state, ``zero_grad``, state dicts,
the three gradient storage strategies, and the stale-gradient check.

Gradient storage strategies (constructor flags of every optimizer):

* default (``foreach=None``/``False``, ``flat_grads=False``): each parameter owns its gradient
  buffer, as in PyTorch. ``zero_grad(set_to_none=False)`` fills each one.
* ``foreach=True``: ``zero_grad`` and ``step`` handle the parameters of one (device, dtype)
  together. On CUDA that means the multi-tensor kernels (one launch zeroes every gradient, one
  launch updates every parameter); on the CPU, NumPy has no multi-tensor primitive, so the same
  per-array loops run (a ``fill(0)`` of a small array is already about 100 ns).
* ``flat_grads=True``: one contiguous gradient buffer per (device, dtype), allocated at
  construction; each parameter's gradient is a view of it (see ``_FlatGradBuffer``).

The update arithmetic does not depend on the storage, so the strategies train bit-identically
on a given device, except that ``foreach=True`` also follows PyTorch's multi-tensor formula,
which rounds differently for ASGD, NAdam and RAdam (``_rules.multi_tensor``). On CUDA the
step of SGD and Adam(W) runs the fused kernels unless ``foreach=False`` is given explicitly
(PyTorch also defaults to its multi-tensor path on CUDA).
"""

from __future__ import annotations

import copy
import functools
import warnings
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import Any

import numpy as np

from .._layout import SPARSE_DATA
from .._tensor import SlotCount, Tensor, grad_epoch, only_grad_writes_since
from .._user_warnings import warn_at_caller
from ..autograd._profiler_record import state as _profiling
from ..autograd.grad_mode import enable_grad
from ..autograd.profiler import record_function
from ..backend import aten_arith

__all__ = ["Optimizer", "StaleGradWarning", "ParamsT"]

ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]]

_get_grad = attrgetter("_grad")
_get_requires_grad = attrgetter("requires_grad")


class StaleGradWarning(UserWarning):
    """``step()`` consumed a gradient that an earlier ``step()`` already used, not reset since.

    The usual cause is a training loop without ``optimizer.zero_grad()``: every backward then
    adds to the gradients of all earlier iterations, and each step applies them again.
    """


def _zeros_like(arr):
    """A zero array of ``arr``'s shape, dtype and device (CuPy allocates on the current GPU)."""
    from ..backend import backend_of

    backend = backend_of(arr)
    with backend.context():
        return backend.xp.zeros_like(arr)


def _at_least_1d(*arrays):
    """0-d arrays as 1-element views (NumPy ufuncs turn 0-d results into scalars, which
    cannot be written in place); None and other arrays unchanged."""
    return tuple(a.reshape(1) if a is not None and a.ndim == 0 else a for a in arrays)


def _as_real_1d(*arrays):
    """``_at_least_1d``'s arrays, and for a complex parameter (the first array: its gradient
    and state share its dtype) each complex array as a view of its real and imaginary parts,
    interleaved (None as it is). PyTorch's Adam family, elementwise optimizers and LBFGS step a
    complex parameter as ``view_as_real`` of it, its gradient and its state: each part its own
    element, so a second moment holds re^2 and im^2, not the complex g^2. (SGD steps it as
    complex numbers, as PyTorch's does.)"""
    arrays = _at_least_1d(*arrays)
    if arrays[0].dtype.kind != "c":
        return arrays
    return tuple(a if a is None or a.dtype.kind != "c" else
                 a.view(a.real.dtype) if a.flags.c_contiguous else
                 a[..., None].view(a.real.dtype) for a in arrays)


def _decayed_grad(xp, p, g, weight_decay: float, maximize: bool):
    """The gradient a step uses: ``-g`` with ``maximize``, plus ``weight_decay * p``
    (``grad.add(param, alpha=weight_decay)``, rounded as PyTorch's kernel rounds it:
    ``aten_arith``); a new array unless it is ``g`` itself."""
    g = xp.negative(g) if maximize else g
    if weight_decay != 0:
        return aten_arith.add_scaled(g, p, weight_decay)
    return g


def _to_array_like(value, param: Tensor):
    """A fresh copy of ``value`` (a Tensor, NumPy array, or anything array-like such as a torch
    tensor) with ``param``'s dtype on ``param``'s device."""
    if isinstance(value, Tensor):
        value = value._backend.to_numpy(value._data)
    arr = np.asarray(value).astype(param._data.dtype)  # astype copies
    backend = param._backend
    with backend.context():
        return backend.asarray(arr) if param.is_cuda else arr


class _FlatGradBuffer:
    """One contiguous gradient buffer for the parameters of one (device, dtype).

    Each parameter gets ``p._grad_slot``: a view of its part of the buffer. The autograd engine
    writes the first gradient of a backward into that view instead of allocating, so every
    gradient lives in the buffer, and zeroing them all is one fill. ``p._slot_count`` (shared
    by the buffer's parameters) counts the gradients that are not their slot view, so that
    after ``zero_grad(set_to_none=True)`` or ``p.grad = None`` and a backward the buffer knows,
    without a walk, that the one fill is right again.
    """

    __slots__ = ("buffer", "params", "slots", "count", "_checked_epoch")

    def __init__(self, params: list[Tensor]) -> None:
        from ..ops.creation import zeros

        first = params[0]
        total = sum(p.numel() for p in params)
        # A tensor, so that the memory statistics count the buffer.
        self.buffer = zeros(total, dtype=first.dtype, device=first.device)
        flat = self.buffer._data
        self.params = params
        self._checked_epoch = -1  # grad_epoch.value when no gradient here was foreign
        self.count = SlotCount(flat, len(params))
        self.slots = []
        offset = 0
        for p in params:
            n = p.numel()
            slot = flat[offset:offset + n].reshape(p._data.shape)
            offset += n
            self.slots.append(slot)
            previous = p._slot_count
            if previous is not None:  # another buffer's parameter too: both count exactly
                previous.shared = self.count.shared = True
            p._grad_slot = slot
            p._slot_count = self.count
            g = p._grad
            if g is not None:  # an existing gradient moves into the buffer
                slot[...] = g._data
                p._grad = Tensor._make(slot, False, None)
        grad_epoch.bump()

    def all_cleared(self) -> None:
        """Every parameter's gradient was just set to None (zero_grad(set_to_none=True))."""
        self.count.reset(len(self.params))

    def zero_(self) -> None:
        """``zero_grad(set_to_none=False)`` for these parameters (docs/semantics.md).

        The common case, where every parameter has a gradient that is still its slot view, is
        one fill of the whole buffer. Gradients that are None stay None (only the views of
        existing gradients are zeroed then), and a gradient the user assigned (``p.grad = t``)
        is zeroed in place where it is.
        """
        # Fast path: no gradient anywhere was rebound to a foreign tensor (grad_epoch
        # unchanged) since none here was, and the slot count says every gradient is its slot
        # view again: one fill, no walk over the parameters. Versions are not bumped (the
        # optimizer's zero epoch marks the reset for the stale-gradient check).
        if self._checked_epoch == grad_epoch.value and self.count.all_slots():
            self.buffer._backend.fill_zero(self.buffer._data)
            return
        epoch = grad_epoch.value
        grads = list(map(_get_grad, self.params))
        # (``None in grads`` would compare tensors elementwise, hence the identity helper.)
        slot_views = sum(map(_is_slot_grad, grads, self.slots))
        foreign = any(g is not None and (not _is_slot_grad(g, slot) or g.requires_grad)
                      for g, slot in zip(grads, self.slots))
        self.count.reset(len(self.params) - slot_views)
        self._checked_epoch = -1 if foreign else epoch
        if slot_views == len(self.params) and not foreign:
            self.buffer._backend.fill_zero(self.buffer._data)
            return
        for g, slot in zip(grads, self.slots):
            if g is None:
                continue
            _detach_grad(g)
            if type(g._data) in SPARSE_DATA:  # a sparse gradient: no entries left
                g.zero_()
                continue
            g._backend.fill_zero(g._data)
            if g._data is not slot:  # a gradient the user assigned: zero it where it is
                g._vbox[0] += 1


def _is_slot_grad(g: Tensor | None, slot) -> bool:
    """True when ``g`` exists and is the flat buffer view ``slot`` (not a user's tensor)."""
    return g is not None and g._data is slot


def _detach_grad(g: Tensor) -> None:
    """docs/semantics.md: a grad with a grad_fn is detached in place, else loses requires_grad."""
    if g.grad_fn is not None:
        g.detach_()
    elif g.requires_grad:
        g.requires_grad = False


class Optimizer:
    """Base class of the optimizers: holds parameter groups and per-parameter state.

    Subclasses define ``_step_group(group, params, grads)`` (the update of the parameters of
    one group that have gradients), ``_ranges`` (the hyperparameter checks of
    ``_check_hyperparameters(group)``) and ``_required_state(group)`` (the state keys a
    non-empty state must have).

    Stale gradients: ``step()`` warns (``StaleGradWarning``, once per optimizer) when it consumes
    a gradient that an earlier ``step()`` already consumed and that was neither zeroed nor
    replaced since. The rule, per parameter: at each step the optimizer records which gradient
    tensor it used (a weak reference) and that tensor's version counter (bumped by every
    in-place write: accumulation by backward, ``zero_()``). At the next step it warns when

    * the gradient is the same tensor object as last time (``set_to_none`` + backward makes a
      new one), and
    * its version changed (a backward added into it; an unchanged version means no backward
      touched it, e.g. a parameter unused in this iteration), and
    * nothing but gradient-carrying writes touched it in between (backward's accumulation,
      DDP's averaging, gradient clipping: ``bump_grad_version``), and this optimizer's
      ``zero_grad`` (either mode) did not run. Any other in-place write counts as the user
      resetting the gradient: ``p.grad.zero_()``, ``p.grad.data.zero_()`` (which
      ``Module.zero_grad(set_to_none=False)`` uses), ``mul_(0)``, ``p.grad[:] = 0``, ``copy_``.

    Accumulating several backward passes before one step is therefore fine; only adding into a
    gradient that a step already applied warns.
    """

    # The range checks of ``_check_hyperparameters``, in PyTorch's order: rows
    # (group key, index into a tuple value or None, message label, exclusive upper bound or
    # None); every value must be >= 0. ``_nan_passes``: the check is PyTorch's ``value < 0``
    # (SGD), which NaN passes, rather than ``not 0 <= value``.
    _ranges: tuple[tuple[str, int | None, str, float | None], ...] = ()
    _nan_passes = False

    def __init__(self, params: ParamsT, defaults: dict[str, Any], *,
                 flat_grads: bool = False) -> None:
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {type(params).__name__}")
        self.defaults = defaults
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        self.flat_grads = bool(flat_grads)
        self._flat_buffers: list[_FlatGradBuffer] = []
        self._zero_epoch = 0  # bumped by every zero_grad: a reset of all this optimizer's grads
        self._consumed: dict[Tensor, tuple[weakref.ref, int, int]] = {}
        self._stale_warned = False
        self._check_hyperparameters(defaults)

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self) -> dict[str, Any]:
        # Pickling and deepcopy: ``_consumed`` holds weak references to gradients (only the
        # stale-gradient check's memory of the last step), which cannot be pickled; a copy
        # starts with an empty one.
        state = self.__dict__.copy()
        state["_consumed"] = {}
        return state

    def __init_subclass__(cls, **kwargs) -> None:
        # A subclass that defines its own ``step`` (LBFGS, a user's optimizer) still marks
        # ``_opt_called``, which lr schedulers read to warn about the call order (PyTorch
        # wraps ``optimizer.step`` for the same purpose).
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_marks_opt_called", False):
            @functools.wraps(step)
            def marked_step(self, *args, **kwargs):
                self._opt_called = True
                return step(self, *args, **kwargs)
            marked_step._marks_opt_called = True
            cls.step = marked_step
        for name in ("step", "zero_grad"):  # (in the profiler's range too, as PyTorch's)
            if name in cls.__dict__:
                setattr(cls, name, _profiled(cls.__dict__[name]))

    # -- parameter groups ---------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with hyperparameters overriding the defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        param_group = dict(param_group)
        params = param_group.get("params")
        if params is None:
            raise ValueError("parameter group didn't specify 'params'")
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)
        names = None
        if params and isinstance(params[0], tuple):  # named_parameters()
            names = [name for name, _ in params]
            params = [p for _, p in params]
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        param_group["params"] = params
        if names is not None:
            param_group["param_names"] = names
        for name, default in self.defaults.items():
            param_group.setdefault(name, default)
        self._check_hyperparameters(param_group)

        if len({id(p) for p in params}) != len(params):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error", stacklevel=3)
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)
        if self.flat_grads:
            self._allocate_flat(params)

    def _allocate_flat(self, params: list[Tensor]) -> None:
        by_key: dict[tuple, list[Tensor]] = {}
        for p in dict.fromkeys(params):  # duplicates once
            if p.is_floating_point():
                by_key.setdefault((str(p.device), p._data.dtype), []).append(p)
        for group_params in by_key.values():
            self._flat_buffers.append(_FlatGradBuffer(group_params))

    # -- hooks for subclasses -------------------------------------------------------------------
    def _check_hyperparameters(self, group: dict[str, Any]) -> None:
        """Raise ValueError (PyTorch's messages, in its order) for a value out of ``_ranges``."""
        for key, index, label, below in self._ranges:
            value = group[key] if index is None else group[key][index]
            if (value < 0.0 if self._nan_passes else not 0.0 <= value) or \
                    (below is not None and not value < below):
                raise ValueError(f"Invalid {label}: {value}")

    def _required_state(self, group: dict[str, Any]) -> tuple[str, ...]:
        """The keys a non-empty state of a parameter in ``group`` must have."""
        return ()

    def _step_group(self, group: dict[str, Any], params: list[Tensor],
                    grads: list[Tensor]) -> None:
        raise NotImplementedError

    # -- zero_grad -----------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized parameters (docs/semantics.md).

        ``set_to_none=True`` (default): ``p.grad = None`` for every parameter that has one; the
        next backward assigns fresh gradients. ``set_to_none=False``: each existing gradient
        is detached (if it has a grad_fn) or loses requires_grad, then zeroed in place, so
        references to it stay valid; gradients that are None stay None.

        With ``flat_grads=True`` the zeroing is one fill of each flat buffer, and with
        ``set_to_none=True`` the buffer stays allocated (the next backward writes into it
        again): flat storage trades memory for speed. The one-fill path does not bump the
        gradients' version counters (that would be a Python loop again), so a graph that saved
        a gradient tensor does not notice it was zeroed; the other paths bump them as
        ``Tensor.zero_`` does.
        """
        self._zero_epoch += 1
        if set_to_none:
            for group in self.param_groups:
                for p in group["params"]:
                    p._grad = None
            # Dropping gradients makes none foreign: flat buffers recount instead of a
            # process-wide bump, unless a parameter is claimed by another buffer too, or
            # there are none (a parameter here may be in another optimizer's buffer).
            flats = self._flat_buffers
            if flats and not any(flat.count.shared for flat in flats):
                for flat in flats:
                    flat.all_cleared()
            else:
                grad_epoch.bump()
            return
        if self.flat_grads:  # every floating-point parameter is in a flat buffer
            for flat in self._flat_buffers:
                flat.zero_()
            return
        # One pass: detach and bump versions while collecting the arrays per device, then one
        # batched zeroing per device: threads share the fills on the CPU; on CUDA, foreach
        # zeroes the contiguous gradients with one multi-tensor launch.
        arrays: dict = {}
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if g.requires_grad:  # a grad_fn implies requires_grad
                    _detach_grad(g)
                if type(g._data) in SPARSE_DATA:  # PyTorch zeroes sparse gradients one by one
                    g.zero_()
                    continue
                arrays.setdefault(g._backend, []).append(g._data)
                g._vbox[0] += 1
        foreach = self.defaults.get("foreach")
        for backend, batch in arrays.items():
            if foreach and backend.device.type == "cuda":
                from ..backend import kernels

                dense = [a for a in batch if a.flags.c_contiguous]
                kernels.multi_tensor_zero(dense)
                backend.fill_zero_many([a for a in batch if not a.flags.c_contiguous])
            else:
                backend.fill_zero_many(batch)

    # -- step ----------------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update the parameters; ``closure`` (re-evaluates the model) is called first, with
        gradients enabled, and its loss is returned."""
        self._opt_called = True  # read by lr schedulers to warn about a wrong call order
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        batches = self._params_with_grads()
        for group, params, grads in batches:
            if not self._stale_warned:
                self._check_stale(params, grads)
            self._step_group(group, params, grads)
            # Each update is an in-place write (PyTorch's param.add_ bumps the version): a
            # graph that saved a parameter before the step then refuses its stale value.
            for p in params:
                p._vbox[0] += 1
        return loss

    def _params_with_grads(self) -> list[tuple[dict[str, Any], list[Tensor], list[Tensor]]]:
        """(group, parameters with a gradient, their gradients) for each group that has one.

        Every gradient is checked against its parameter (shape, dtype, device) before any
        update, so a step that cannot be applied raises and changes nothing (PyTorch would
        update the parameters before the bad one and then fail). A gradient of the same kind
        but another precision (a float64 gradient of a float32 parameter, which only a dtype
        leak in some backward can produce, as ``p.grad = t`` checks the dtype) is applied
        rounded to the parameter's dtype, as PyTorch's accumulation would have stored it, with
        a warning.
        """
        batches = []
        index = 0
        for group_index, group in enumerate(self.param_groups):
            params, grads = [], []
            for p in group["params"]:
                g = p._grad
                if g is not None:
                    pa, ga = p._data, g._data
                    if type(ga) in SPARSE_DATA:
                        self._check_sparse_grad(index, group_index, p, g)
                        params.append(p)
                        grads.append(g)
                        index += 1
                        continue
                    if not self._takes_dense:
                        raise RuntimeError(self._dense_refusal)
                    if (ga.shape != pa.shape or type(ga) is not type(pa)
                            or (type(pa) is not np.ndarray and ga.device != pa.device)):
                        raise RuntimeError(_bad_grad_message(index, group_index, p, g))
                    if ga.dtype != pa.dtype:
                        if not np.can_cast(ga.dtype, pa.dtype, "same_kind"):
                            raise RuntimeError(_bad_grad_message(index, group_index, p, g))
                        warnings.warn(f"optimizer.step(): the gradient of parameter {index} "
                                      f"is {g.dtype} but the parameter is {p.dtype}; applied "
                                      f"as {p.dtype}", UserWarning, stacklevel=3)
                        g = Tensor._make(ga.astype(pa.dtype))
                    params.append(p)
                    grads.append(g)
                index += 1
            if params:
                batches.append((group, params, grads))
        return batches

    # Whether step() takes sparse gradients (SGD, Adagrad, SparseAdam, LBFGS); the others
    # raise PyTorch's error, ``_sparse_refusal`` or "<Name> does not support sparse gradients".
    _takes_sparse = False
    _sparse_refusal: str | None = None
    _takes_dense = True  # (False: SparseAdam, which raises ``_dense_refusal``)
    _dense_refusal = ""

    def _check_sparse_grad(self, index: int, group_index: int, p: Tensor, g: Tensor) -> None:
        if not self._takes_sparse:
            raise RuntimeError(self._sparse_refusal
                               or f"{type(self).__name__} does not support sparse gradients")
        if g.shape != p.shape or g.device != p.device or g.dtype != p.dtype:
            raise RuntimeError(_bad_grad_message(index, group_index, p, g))

    def _check_stale(self, params: list[Tensor], grads: list[Tensor]) -> None:
        """Warn if a gradient was consumed by an earlier step and not reset (see the class)."""
        consumed = self._consumed
        epoch = self._zero_epoch
        for p, g in zip(params, grads):
            version = g._vbox[0]
            record = consumed.get(p)
            if (record is not None and record[2] == epoch and record[0]() is g
                    and version != record[1] and only_grad_writes_since(g, record[1])):
                self._stale_warned = True
                warn_at_caller(
                    "optimizer.step() is applying a gradient that an earlier step() already "
                    "applied: it was accumulated into since, without zero_grad() (or "
                    "p.grad.zero_() / p.grad = None) in between, so old gradients are applied "
                    "again. Call optimizer.zero_grad() once per step.",
                    StaleGradWarning)  # the caller of step(), past the wrappers of step
                consumed.clear()
                return
            consumed[p] = (weakref.ref(g), version, epoch)

    # -- state dicts ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state in PyTorch's format.

        ``state`` maps the integer index of each parameter (counted through the groups in
        order) to its state; ``param_groups`` holds each group's hyperparameters with
        ``params`` as index lists. As in PyTorch the state tensors are the live ones, not
        copies: deep-copy the dict (or save it) to keep a snapshot.
        """
        mapping: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                mapping.setdefault(id(p), len(mapping))
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {mapping[id(p)]: s for p, s in self.state.items() if id(p) in mapping}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state from ``state_dict()`` (copied: later steps do not touch the dict).

        Everything is validated before anything changes: a dict that does not fit these
        parameters (group or parameter counts, state shapes, missing keys, invalid
        hyperparameters) raises ValueError and leaves the optimizer as it was.
        """
        if not isinstance(state_dict, dict):
            raise ValueError(f"state_dict must be a dict, got {type(state_dict).__name__}")
        for key in ("state", "param_groups"):
            if key not in state_dict:
                raise ValueError(f"loaded state dict is missing the {key!r} key")
        saved_groups = state_dict["param_groups"]
        saved_state = state_dict["state"]
        if not isinstance(saved_state, dict):
            raise ValueError("loaded state dict's 'state' must be a dict")
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"loaded state dict has a different number of parameter groups "
                             f"({len(saved_groups)} vs the optimizer's "
                             f"{len(self.param_groups)})")

        index_to_param: dict[Any, Tensor] = {}
        index_to_group: dict[Any, dict[str, Any]] = {}
        new_groups = []
        for i, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if not isinstance(saved, dict) or "params" not in saved:
                raise ValueError(f"parameter group {i} of the loaded state dict has no 'params'")
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(f"loaded state dict contains a parameter group that doesn't "
                                 f"match the size of optimizer's group (group {i}: "
                                 f"{len(saved['params'])} parameters vs "
                                 f"{len(group['params'])})")
            missing = [k for k in self.defaults if k not in saved]
            if missing:
                raise ValueError(f"parameter group {i} of the loaded state dict is missing "
                                 f"{', '.join(map(repr, missing))}")
            new_group = {k: copy.deepcopy(v) for k, v in saved.items() if k != "params"}
            new_group["params"] = group["params"]
            self._check_hyperparameters(new_group)
            for index, p in zip(saved["params"], group["params"]):
                index_to_param[index] = p
                index_to_group[index] = new_group
            new_groups.append(new_group)

        new_state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        for index, saved in saved_state.items():
            if index not in index_to_param:
                raise ValueError(f"loaded state dict has state for parameter {index!r}, which "
                                 f"is in none of its parameter groups")
            if not isinstance(saved, dict):
                raise ValueError(f"state of parameter {index!r} must be a dict, got "
                                 f"{type(saved).__name__}")
            p = index_to_param[index]
            if saved:
                missing = [k for k in self._required_state(index_to_group[index])
                           if k not in saved]
                if missing:
                    raise ValueError(f"state of parameter {index!r} is missing "
                                     f"{', '.join(map(repr, missing))}")
            new_state[p] = {k: self._load_state_value(index, k, v, p) for k, v in saved.items()}

        self.param_groups = new_groups
        self.state = new_state
        self._consumed.clear()

    @staticmethod
    def _load_state_value(index, key: str, value, p: Tensor):
        """A validated copy of one state entry: ``step`` a float32 0-d CPU tensor, tensors
        converted to the parameter's dtype and device."""
        if key == "step":
            arr = np.asarray(value._backend.to_numpy(value._data) if isinstance(value, Tensor)
                             else value).astype(np.float32)
            if arr.shape != ():
                raise ValueError(f"state {key!r} of parameter {index!r} must be a scalar, got "
                                 f"shape {list(arr.shape)}")
            return Tensor._make(arr.copy())
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        shape = tuple(getattr(value, "shape", np.shape(value)))
        if shape != tuple(p.shape):
            raise ValueError(f"state {key!r} of parameter {index!r} has shape {list(shape)}, "
                             f"but the parameter has shape {list(p.shape)}")
        return Tensor._make(_to_array_like(value, p))

    # -- helpers for subclasses ------------------------------------------------------------------
    def _state_tensor(self, p: Tensor, fill: float = 0.0) -> Tensor:
        """A new state tensor like ``p`` filled with ``fill``."""
        arr = _zeros_like(p._data)
        if fill:
            arr.fill(fill)
        return Tensor._make(arr)

    @staticmethod
    def _use_fused(group: dict[str, Any], params: list[Tensor]) -> bool:
        """True when this group's step runs the CUDA multi-tensor kernels."""
        return group.get("foreach") is not False and params[0].is_cuda

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


def _profiled(method):
    """``method`` inside PyTorch's profiler range ``Optimizer.<method>#<Class>.<method>``
    while a profiler records (one flag read otherwise)."""
    if getattr(method, "_profiled", False):
        return method
    kind = method.__name__

    @functools.wraps(method)
    def wrapped(self, *args, **kwargs):
        if _profiling.active:
            name = f"Optimizer.{kind}#{type(self).__name__}.{kind}"
            with record_function(name):
                return method(self, *args, **kwargs)
        return method(self, *args, **kwargs)

    wrapped._profiled = True
    return wrapped


Optimizer.step = _profiled(Optimizer.step)
Optimizer.zero_grad = _profiled(Optimizer.zero_grad)


def _bad_grad_message(index: int, group_index: int, p: Tensor, g: Tensor) -> str:
    """The error of a gradient that does not fit its parameter (``step()`` checks them all)."""
    return (f"optimizer.step(): the gradient of parameter {index} (in param_groups"
            f"[{group_index}]) does not match the parameter: gradient {list(g.shape)} "
            f"{g.dtype} on {g.device}, parameter {list(p.shape)} {p.dtype} on {p.device}. "
            f"Nothing was updated (was the parameter's .data replaced after backward?)")


def _step_tensor() -> Tensor:
    """The ``step`` state entry: a float32 0-d CPU tensor, as in PyTorch's state dicts."""
    return Tensor._make(np.zeros((), dtype=np.float32))


def _increment(step: Tensor) -> float:
    """Add one to a ``step`` state tensor in place and return its new value."""
    arr = step._data
    arr += 1
    return float(arr)
