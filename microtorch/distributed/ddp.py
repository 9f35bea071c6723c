"""``DistributedDataParallel``: one model replica per process, gradients averaged in buckets.

How a synchronised step works (PyTorch's Reducer, simplified):

* Construction broadcasts rank 0's parameters and buffers, then packs the parameters that
  require grad into buckets: flat buffers per (device, dtype), filled in *reverse*
  registration order (roughly the order backward produces gradients), capped at
  ``bucket_cap_mb`` (the first bucket at 1 MB, so communication starts early). With
  ``gradient_as_bucket_view`` every parameter's ``_grad_slot`` is its view of a bucket: the
  autograd engine writes gradients straight into the bucket, nothing is copied.
* During backward a post-accumulate hook counts each parameter's gradient; once a bucket is
  complete (and every earlier bucket launched: all ranks must issue collectives in the same
  order) its all-reduce is launched without blocking, and later hooks drive its progress, so
  communication overlaps the rest of backward.
* A final callback of the backward pass launches the buckets still waiting (parameters that
  got no gradient here) and waits for all of them, with the process group's deadline.

Each bucket carries one extra element per parameter after the gradients: 1 where this rank
has a gradient for it, else 0. They are summed along with the gradients, so the reduction
also says, for free, which parameters got a gradient on *any* rank: those end with a
gradient (a rank without one contributed zeros), the others stay None.
"""

from __future__ import annotations

import hashlib
import json
import time
import weakref
from contextlib import contextmanager

import numpy as np

from .._tensor import Tensor, bump_grad_version, grad_epoch
from ..autograd import engine
from ..autograd.grad_mode import is_grad_enabled
from ..nn.modules.module import Module
from ..utils.memory import _tensors_in
from . import process_group as pg_api
from ._common import ReduceOp, Work

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024  # PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES


class _Bucket:
    """A flat buffer holding the gradients of some parameters, plus their used-flags."""

    def __init__(self, params: list[Tensor], as_view: bool) -> None:
        first = params[0]
        backend = first._backend
        self.params = params
        self.numel = sum(p._data.size for p in params)
        with backend.context():
            flat = backend.xp.zeros(self.numel + len(params), dtype=first._data.dtype)
        # A Tensor, so that the memory statistics count the bucket.
        self.buffer = Tensor._make(flat)
        self.flat = flat
        self.grads = flat[:self.numel]
        self.flags = flat[self.numel:]
        self.views = []
        offset = 0
        for p in params:
            n = p._data.size
            self.views.append(flat[offset:offset + n].reshape(p._data.shape))
            offset += n
        if as_view:
            for p, view in zip(params, self.views):
                p._grad_slot = view
                if p._grad is not None:  # an existing gradient moves into the bucket
                    view[...] = p._grad._data
                    p._grad = Tensor._make(view, False, None)
                    grad_epoch.bump()
        self.pending = len(params)  # gradients still to come in this backward
        self.work: Work | None = None

    def launch(self, group) -> Work:
        """Copy in what is not already in place, then start the all-reduce."""
        self.flags.fill(1)
        for k, (p, view) in enumerate(zip(self.params, self.views)):
            g = p._grad
            if g is None:  # no gradient here: contribute zeros and say so in the flags
                view.fill(0)
                self.flags[k] = 0
            elif g._data is not view:  # gradient_as_bucket_view=False, or a user-set .grad
                view[...] = g._data
        self.work = group.allreduce(self.flat, ReduceOp.SUM)
        return self.work

    def finish(self, world_size: int, as_view: bool) -> None:
        """Average, then hand every parameter its reduced gradient."""
        if world_size > 1:
            self.grads[...] /= world_size  # in place: dtype kept; the flags stay counts
        used = (self.flags > 0).tolist()
        for p, view, used_anywhere in zip(self.params, self.views, used):
            g = p._grad
            if g is None:
                if used_anywhere:  # a gradient on another rank: this one's is zeros + theirs
                    p._grad = Tensor._make(view if as_view else view.copy(), False, None)
                    grad_epoch.bump()
            else:
                if g._data is not view:
                    g._data[...] = view
                bump_grad_version(g)  # written in place: version counters must see it
        self.work = None  # pending is reset by the next forward


def _mismatch_message(lists: list[list]) -> str:
    """The first difference between rank 0's parameters and another rank's, in words."""
    def describe(entry) -> str:
        name, shape, dtype = entry
        return f"{name!r} of shape {tuple(shape)} ({dtype})"

    ref = lists[0]
    for rank, other in enumerate(lists[1:], 1):
        for i in range(max(len(ref), len(other))):
            a = ref[i] if i < len(ref) else None
            b = other[i] if i < len(other) else None
            if a != b:
                where = (f"parameter {i}: rank 0 has "
                         f"{describe(a) if a else 'no such parameter'}, rank {rank} has "
                         f"{describe(b) if b else 'no such parameter'}")
                return (f"DistributedDataParallel expects the same model on every rank, but "
                        f"rank 0 has {len(ref)} parameters that require grad and rank {rank} "
                        f"has {len(other)}; the first difference is {where}")
    return "DistributedDataParallel: the ranks' parameters differ"


def _weak_method(obj, name: str):
    """A function calling ``obj.<name>(*args)`` while ``obj`` lives (hooks must not keep the
    wrapper alive through the parameters)."""
    ref = weakref.ref(obj)

    def call(*args) -> None:
        target = ref()
        if target is not None:
            getattr(target, name)(*args)

    return call


class DistributedDataParallel(Module):
    """Data-parallel training of ``module``: gradients averaged over all ranks after backward.

    Construct it after ``init_process_group`` and after moving the module to its device;
    build the optimizer from ``ddp.parameters()`` (or the module's: they are the same).
    ``no_sync()`` accumulates gradients locally; the first backward after it communicates
    the whole window once. ``zero_grad(set_to_none=True)`` and ``False`` both work: a
    gradient set to None is written back into its bucket view by the next backward.

    Differences from PyTorch, all deliberate: ``gradient_as_bucket_view`` defaults to True
    (zero copies); parameters without a gradient in a backward never stall or fail the
    reduction, so ``find_unused_parameters`` is accepted for compatibility but not needed;
    ``output_device``/``dim`` are accepted for compatibility only (one device per process).
    Optimizers' ``flat_grads=True`` would take the parameters' gradient slots away from the
    buckets: it still trains correctly (gradients copied in and out) but is pointless here.
    """

    def __init__(self, module: Module, device_ids: list | None = None, output_device=None,
                 dim: int = 0, broadcast_buffers: bool = True, process_group=None,
                 bucket_cap_mb: float | None = 25, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = True,
                 static_graph: bool = False) -> None:
        super().__init__()
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        self.module = module
        self.device_ids = device_ids
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.bucket_cap_mb = 25 if bucket_cap_mb is None else bucket_cap_mb
        self.require_backward_grad_sync = True
        group = pg_api._default_group()
        self._group = group
        self.world_size: int = group.size
        self.rank: int = group.rank
        self._verify_same_parameters()
        self._sync_module_states()
        self._buckets = self._build_buckets()
        self._where: dict[int, _Bucket] = {}
        for bucket in self._buckets:
            for p in bucket.params:
                self._where[id(p)] = bucket
        on_grad_ready = _weak_method(self, "_on_grad_ready")
        self._hook_handles = [engine.register_post_accumulate_grad_hook(p, on_grad_ready)
                              for p in self._params()]
        self._expect_sync = False  # set by a forward whose backward must communicate
        self._final_queued = False
        self._next_bucket = 0  # buckets launch strictly in order (same order on every rank)
        self.comm_stats: dict[str, float] = {}  # timings of the last synchronised backward

    # -- construction ---------------------------------------------------------------------------
    def _params(self) -> list[Tensor]:
        return [p for p in self.module.parameters() if p.requires_grad]

    def _parameter_signature(self) -> list[tuple[str, tuple[int, ...], str]]:
        return [(name, tuple(p.shape), str(p.dtype)) for name, p in
                self.module.named_parameters() if p.requires_grad]

    def _gather(self, values: np.ndarray) -> np.ndarray:
        """Every rank's ``values`` (int64, same length everywhere), one row per rank."""
        xp = self._params()[0]._backend.xp if self._params() else np
        out = xp.zeros((self.world_size, values.size), dtype=np.int64)
        self._group.allgather(out, xp.asarray(values)).wait()
        return out.get() if hasattr(out, "get") else out

    def _verify_same_parameters(self) -> None:
        """Refuse to train when ranks hold different models (PyTorch checks this too).

        One small all-gather of (parameter count, digest of names, shapes and dtypes); only
        when they differ do the ranks exchange their full lists, so that every rank raises
        the same error naming the first mismatching parameter and both ranks' shapes.
        """
        if self.world_size == 1:
            return
        signature = self._parameter_signature()
        digest = hashlib.blake2b(repr(signature).encode(), digest_size=8).digest()
        mine = np.array([len(signature), int.from_bytes(digest, "little", signed=True)],
                        dtype=np.int64)
        rows = self._gather(mine)
        if (rows == rows[0]).all():
            return
        text = np.frombuffer(json.dumps(signature).encode(), dtype=np.uint8).astype(np.int64)
        longest = int(self._gather(np.array([text.size], dtype=np.int64)).max())
        padded = np.zeros(longest, dtype=np.int64)
        padded[:text.size] = text
        lists = [json.loads(bytes(row[row > 0].astype(np.uint8).tolist()).decode())
                 for row in self._gather(padded)]
        raise RuntimeError(_mismatch_message(lists))

    def _sync_module_states(self) -> None:
        """Every rank starts from rank 0's parameters and buffers."""
        if self.world_size == 1:
            return
        tensors = list(self.module.parameters()) + list(self.module.buffers())
        self._broadcast_from_rank0(tensors)
        for t in tensors:
            t._vbox[0] += 1

    def _broadcast_from_rank0(self, tensors: list[Tensor]) -> None:
        """Overwrite ``tensors`` with rank 0's: every broadcast launched, then all awaited."""
        works = [self._group.broadcast(t._data, 0) for t in tensors]
        for w in works:
            w.wait()

    def _build_buckets(self) -> list[_Bucket]:
        """Group parameters, last registered first, into capped flat buckets per device/dtype."""
        cap = int(self.bucket_cap_mb * 1024 * 1024)
        open_buckets: dict[tuple, list[Tensor]] = {}
        open_bytes: dict[tuple, int] = {}
        closed: list[list[Tensor]] = []
        first_closed: set[tuple] = set()
        for p in reversed(self._params()):
            key = (str(p.device), p._data.dtype)
            open_buckets.setdefault(key, []).append(p)
            open_bytes[key] = open_bytes.get(key, 0) + p._data.nbytes
            limit = cap if key in first_closed else min(cap, _FIRST_BUCKET_BYTES)
            if open_bytes[key] >= limit:
                closed.append(open_buckets.pop(key))
                open_bytes[key] = 0
                first_closed.add(key)
        closed.extend(open_buckets.values())
        return [_Bucket(params, self.gradient_as_bucket_view) for params in closed]

    # -- forward --------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        """Run the wrapped module; arm the gradient reduction of the coming backward."""
        if self.broadcast_buffers and self.world_size > 1:
            self._broadcast_from_rank0(list(self.module.buffers()))
        sync = is_grad_enabled() and self.require_backward_grad_sync
        self._expect_sync = sync
        self._final_queued = False
        self._next_bucket = 0
        for bucket in self._buckets:
            bucket.pending = len(bucket.params)
        out = self.module(*inputs, **kwargs)
        if sync:
            # A hook on the outputs queues the final callback even if no parameter of this
            # rank gets a gradient: the other ranks still expect this rank's reductions.
            queue_final = _weak_method(self, "_queue_final")
            for t in _tensors_in(out):
                if t.requires_grad and t.grad_fn is not None:
                    t.register_hook(lambda grad: queue_final())
        return out

    @contextmanager
    def no_sync(self):
        """Inside: forwards and backwards accumulate gradients locally, with no communication."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # -- backward ----------------------------------------------------------------------------------
    def _queue_final(self) -> None:
        if self._expect_sync and not self._final_queued:
            self._final_queued = True
            self.comm_stats = {"backward_start": time.perf_counter()}
            engine.queue_callback(self._finish_reduction)

    def _on_grad_ready(self, param: Tensor) -> None:
        """Post-accumulate hook: count the gradient; launch the buckets that are complete."""
        if not self._expect_sync:
            return
        self._queue_final()
        bucket = self._where[id(param)]
        bucket.pending -= 1
        if bucket.pending == 0:
            self._launch_ready()
        else:
            self._poke()

    def _launch_ready(self) -> None:
        buckets = self._buckets
        while self._next_bucket < len(buckets) and buckets[self._next_bucket].pending <= 0:
            buckets[self._next_bucket].launch(self._group)
            self._next_bucket += 1

    def _poke(self) -> None:
        """Let in-flight reductions progress (MPI advances only inside MPI calls)."""
        for bucket in self._buckets[:self._next_bucket]:
            if bucket.work is not None and not bucket.work.is_completed():
                break

    def _finish_reduction(self) -> None:
        """End of backward: launch what is left, wait for everything, unpack the results."""
        start = time.perf_counter()
        self._expect_sync = False
        launched_early = self._next_bucket
        for bucket in self._buckets[self._next_bucket:]:
            bucket.launch(self._group)
        self._next_bucket = len(self._buckets)
        for bucket in self._buckets:
            bucket.work.wait()
        waited = time.perf_counter()
        for bucket in self._buckets:
            bucket.finish(self.world_size, self.gradient_as_bucket_view)
        # exposed_s: communication backward could not hide; unpack_s: averaging and handing
        # out the gradients (local work, the same with or without overlap).
        self.comm_stats.update(backward_end=start, exposed_s=waited - start,
                               unpack_s=time.perf_counter() - waited,
                               buckets=len(self._buckets), launched_early=launched_early)

    # -- state ------------------------------------------------------------------------------------
    def bucket_sizes(self) -> list[int]:
        """How many gradient elements each bucket holds (in launch order)."""
        return [b.numel for b in self._buckets]
