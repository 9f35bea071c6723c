"""``torch.utils.checkpoint``: activation checkpointing, trading compute for memory.

``checkpoint(fn, *args, use_reentrant=False)`` runs ``fn`` keeping none of the tensors its
ops save for backward: saved-tensor hooks (``autograd.graph``) store an empty holder instead,
and the first unpack in a backward pass reruns ``fn`` from its saved inputs (same RNG state,
same autocast state) under hooks that catch the recomputed tensors, stopping as soon as every
holder is filled. ``use_reentrant=True`` is the older scheme: a ``Function`` whose forward runs
``fn`` under no_grad and whose backward reruns it and calls ``backward`` inside backward.
``checkpoint_sequential`` checkpoints the segments of a sequential model.

Not available: selective checkpointing (``create_selective_checkpoint_contexts``: it needs
PyTorch's dispatcher modes to see every op) and ``torch.compile`` integration.
"""

from __future__ import annotations

import contextlib
import os
import traceback
import uuid
import warnings
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from .. import cpu, cuda, random
from .._tensor import Tensor
from ..amp import autocast_mode as amp
from ..autograd import engine, saved
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from ..autograd.graph import saved_tensors_hooks
from ..autograd.saved import SavedTensor
from ..backend import autotune

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "get_device_states",
           "set_device_states", "noop_context_fn", "set_checkpoint_early_stop",
           "DefaultDeviceType", "set_checkpoint_debug_enabled", "GraphExecGroup"]

_DEFAULT_DETERMINISM_MODE = "default"
_checkpoint_debug_enabled: bool | None = None
_enable_checkpoint_early_stop: bool | None = None


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """Context manager overriding every checkpoint's ``debug`` flag (None: each call's own)."""
    global _checkpoint_debug_enabled
    prev = _checkpoint_debug_enabled
    _checkpoint_debug_enabled = enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Context manager: whether non-reentrant checkpoints made inside it stop recomputing as
    soon as every tensor they need is back (the default). Read when the forward runs."""
    global _enable_checkpoint_early_stop
    prev = _enable_checkpoint_early_stop
    _enable_checkpoint_early_stop = enable
    try:
        yield
    finally:
        _enable_checkpoint_early_stop = prev


class CheckpointError(RuntimeError):
    """The recomputation saved different tensors than the original forward."""


def detach_variable(inputs: tuple) -> tuple:
    """The tensors of ``inputs`` detached, each keeping its ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if isinstance(inp, Tensor):
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            inp = x
        out.append(inp)
    return tuple(out)


def check_backward_validity(inputs: Iterable) -> None:
    """Warn when no input tensor requires grad (the reentrant checkpoint then gives none)."""
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


def _device_module(device_type: str):
    return cuda if device_type == "cuda" else cpu


def _device_initialized(device_type: str) -> bool:
    return device_type == "cuda" and cuda.is_initialized()


class DefaultDeviceType:
    """The device type whose RNG state checkpoint keeps when no argument is on an
    accelerator: the accelerator's ("cuda" where one is available), else "cpu"."""

    _default_device_type: str | None = None

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        """Set the default device type."""
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        """The default device type."""
        if not DefaultDeviceType._default_device_type:
            DefaultDeviceType._default_device_type = "cuda" if cuda.is_available() else "cpu"
        return DefaultDeviceType._default_device_type


def _tensors_in(value, out: list) -> list:
    """The tensors in ``value``, looking into tuples, lists and dicts (PyTorch's tree_map)."""
    if isinstance(value, Tensor):
        out.append(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _tensors_in(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _tensors_in(v, out)
    return out


def _infer_device_type(*args) -> str:
    types = [t.device.type for t in _tensors_in(args, []) if t.device.type != "cpu"]
    if not types:
        return DefaultDeviceType.get_device_type()
    return "cuda" if "cuda" in types else types[0]


def get_device_states(*args) -> tuple[list[int], list[Tensor]]:
    """The ids of the GPUs holding tensors among ``args``, and each one's RNG state."""
    ids = [cuda.current_device() if t.device.index is None else t.device.index
           for t in _tensors_in(args, []) if t.device.type == "cuda"]
    ids = list(dict.fromkeys(ids))
    return ids, [cuda.get_rng_state(i) for i in ids]


def set_device_states(devices, states, *, device_type: str | None = None) -> None:
    """Restore the RNG state of each device in ``devices``."""
    if device_type is None:
        device_type = DefaultDeviceType.get_device_type()
    if device_type != "cuda":
        return
    for device, state in zip(devices, states):
        cuda.set_rng_state(state, device)


def _get_autocast_kwargs(device_type: str = "cuda") -> tuple[dict | None, dict | None]:
    """The autocast state of the forward, per device type (None: autocast unavailable)."""
    def state(kind: str) -> dict | None:
        if not amp.is_autocast_available(kind):
            return None
        try:
            dtype = amp.get_autocast_dtype(kind)
        except RuntimeError:  # no low-precision dtype in this build: autocast cannot be on
            return None
        return {"enabled": amp.is_autocast_enabled(kind), "dtype": dtype,
                "cache_enabled": amp.is_autocast_cache_enabled()}

    return state(device_type), state("cpu")


def _autocast(device_type: str, kwargs: dict | None):
    """The forward's autocast state again, whatever the state where recomputation runs."""
    if kwargs is None:
        return contextlib.nullcontext()
    return amp.autocast(device_type=device_type, **kwargs)


class _RngState:
    """The RNG states a checkpointed forward ran with (CPU always; the GPUs of its tensor
    arguments when CUDA was in use), restored around its recomputation."""

    def __init__(self, device_type: str, args: tuple) -> None:
        self.device_type = device_type
        self.cpu = random.get_rng_state()
        self.had_device = _device_initialized(device_type)
        self.devices, self.states = get_device_states(*args) if self.had_device else ([], [])

    @contextlib.contextmanager
    def replay(self):
        """Run the block from the forward's RNG states; the callers' states come back after."""
        with random.fork_rng(devices=self.devices, device_type=self.device_type):
            random.set_rng_state(self.cpu)
            if self.had_device:
                set_device_states(self.devices, self.states, device_type=self.device_type)
            yield


class CheckpointFunction(Function):
    """The reentrant checkpoint: forward under no_grad, backward recomputes and runs
    backward on the recomputed graph."""

    user_contract = True  # PyTorch's Function contract (tensors in and out), inside microtorch

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        """Run ``run_function(*args)`` under no_grad, keeping the inputs, RNG states and
        autocast state for the recomputation."""
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.device_type = _infer_device_type(*args)
        ctx.device_autocast_kwargs, ctx.cpu_autocast_kwargs = _get_autocast_kwargs(
            ctx.device_type)
        if preserve_rng_state:
            ctx.rng = _RngState(ctx.device_type, args)
        # Non-tensor arguments stay on ctx; tensors are saved (placeholders in ctx.inputs).
        ctx.inputs, ctx.tensor_indices, tensors = [], [], []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensors)
        with no_grad(), autotune.recording() as ctx.picks:
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        """Recompute under enable_grad from detached inputs and backpropagate ``grads``
        through the recomputed graph (a backward inside backward)."""
        if not engine.is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() "
                "or passing an `inputs` parameter to .backward(). To resolve this error, you "
                "can either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        rng = ctx.rng.replay() if ctx.preserve_rng_state else contextlib.nullcontext()
        with rng:
            detached = detach_variable(tuple(inputs))
            with enable_grad(), _autocast(ctx.device_type, ctx.device_autocast_kwargs), \
                    _autocast("cpu", ctx.cpu_autocast_kwargs), autotune.replaying(ctx.picks):
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        with_grad = [(o, g) for o, g in zip(outputs, grads)
                     if isinstance(o, Tensor) and o.requires_grad]
        if not with_grad:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        from ..autograd import backward

        backward([o for o, _ in with_grad], [g for _, g in with_grad])
        return (None, None) + tuple(inp.grad if isinstance(inp, Tensor) else None
                                    for inp in detached)


def noop_context_fn() -> tuple:
    """The default ``context_fn``: no context around forward or recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(function, *args, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple] = noop_context_fn,
               determinism_check: str = _DEFAULT_DETERMINISM_MODE, debug: bool = False,
               early_stop: bool = True, **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its activations; they are recomputed
    during backward. Pass ``use_reentrant`` explicitly (False recommended); left out it warns
    and uses the reentrant variant, as PyTorch 2.13 does. ``preserve_rng_state=True`` (a
    keyword) replays the forward's random numbers (dropout masks) in the recomputation."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    gen = _checkpoint_without_reentrant_generator(
        function, preserve, context_fn, determinism_check, debug, early_stop, *args, **kwargs)
    next(gen)  # before the forward: hooks on
    try:
        ret = function(*args, **kwargs)
    except BaseException as e:
        try:
            gen.throw(e)
        except StopIteration as stop:
            raise RuntimeError(
                "torch.utils.checkpoint: the forward context provided by context_fn suppressed "
                "an exception raised during the checkpointed forward. This is not supported "
                "because checkpoint cannot return a value for a failed forward.") from stop
        raise
    try:
        next(gen)  # after the forward: hooks off, checks
    except StopIteration:
        return ret
    raise AssertionError("torch.utils.checkpoint: expected context_fn generator to yield "
                         "exactly twice, but it yielded more than twice.")


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None,
                          **kwargs):
    """Run a sequential model (an ``nn.Sequential`` or a list of modules/functions) in
    ``segments`` chunks, checkpointing every chunk but the last."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
            "be passed explicitly. In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is recommended, but if you need to preserve "
            "the current default behavior, you can pass use_reentrant=True. Refer to docs for "
            "more details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    from ..nn import Sequential

    if isinstance(functions, Sequential):
        functions = list(functions.children())

    def run_function(start: int, end: int):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1)(input)


# -- the non-reentrant checkpoint ------------------------------------------------------------
# Saved tensors belong to the innermost checkpoint; a nested checkpoint's inputs are saved
# tensors of its parent, so unpacking a tensor of the inner one recomputes the outer one first.
# Recomputed tensors live until they are unpacked once (per backward pass), even with
# retain_graph: each holder carries, per pass, a handle keying the recomputed tensor in a weak
# dict, and the handle is dropped at unpack.


def _internal_assert(cond: bool) -> None:
    if not cond:
        raise AssertionError("Something went unexpectedly wrong in activation checkpoint. "
                             "Please report this bug by filing an issue to PyTorch.")


class _Handle:
    pass


class _Holder:
    """What a checkpointed forward saves in place of a tensor: per backward pass, the handle
    of its recomputed value."""

    def __init__(self) -> None:
        self.handles: dict[Any, _Handle | None] = {}


class _StopRecomputationError(Exception):
    pass


def _default_meta_extractor(x: Tensor) -> dict:
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_allowed_determinism_checks_to_fns: dict[str, Callable] = {
    _DEFAULT_DETERMINISM_MODE: _default_meta_extractor,
    "none": lambda _: None,
}

_DEBUG_TIP = ("\nTip: To see a more detailed error message, either pass `debug=True` to\n"
              "`torch.utils.checkpoint.checkpoint(...)` or wrap the code block\n"
              "with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to\n"
              "enable checkpoint-debug mode globally.\n")


class _CheckpointFrame:
    """One checkpointed call: its inputs, a weak holder per tensor its forward saved, and
    per backward pass the recomputed tensors."""

    def __init__(self, recompute_fn, early_stop: bool, unpack_error_cb, metadata_fn) -> None:
        self.recompute_fn = recompute_fn
        self.saved_args: list = []
        self.weak_holders: list = []
        self.recomputed: defaultdict = defaultdict(weakref.WeakKeyDictionary)
        self.recomp_counter: defaultdict = defaultdict(int)
        self.is_recomputed: defaultdict = defaultdict(bool)
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.unpack_error_cb = unpack_error_cb
        self.x_metadatas: list = []
        self.forward_completed = False
        self.ignore_saved_mismatch = False
        self.debug_logs: tuple[list, list] | None = None  # debug=True: see _debug_report

    def save_inputs(self, *args) -> None:
        self.saved_args = [SavedTensor(a) if isinstance(a, Tensor) else a for a in args]

    def get_inputs(self) -> list:
        return [a.unpack() if isinstance(a, SavedTensor) else a for a in self.saved_args]

    def check_recomputed_tensors_match(self, gid) -> None:
        if self.ignore_saved_mismatch:
            return
        if len(self.weak_holders) != self.recomp_counter[gid]:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.weak_holders)}\n"
                f"Number of tensors saved during recomputation: {self.recomp_counter[gid]}.\n"
                f"{_DEBUG_TIP}")
        mismatched = []
        for idx, weak_holder in enumerate(self.weak_holders):
            holder = weak_holder()
            if holder is None:
                continue
            handle = holder.handles.get(gid)
            _internal_assert(handle is not None and handle in self.recomputed[gid])
            recomputed = self.metadata_fn(self.recomputed[gid][handle])
            if self.x_metadatas[idx] != recomputed:
                mismatched.append(f"tensor at position {idx}:\n"
                                  f"saved metadata: {self.x_metadatas[idx]}\n"
                                  f"recomputed metadata: {recomputed}\n")
        if mismatched:
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                "different metadata than during the forward pass.\n"
                f"{''.join(mismatched)}.\n{_DEBUG_TIP}")


def _debug_entry(x: Tensor) -> tuple:
    """What debug mode records of a saved tensor: the op saving it, its metadata and where the
    user's code ran it (microtorch's own frames left out)."""
    node = saved.saving_node()
    frames = [f for f in traceback.extract_stack()[:-2]
              if f"{os.sep}microtorch{os.sep}" not in f.filename]
    name = node.name() if node is not None else "(checkpoint input)"
    return f"{name}: {list(x.shape)} {x.dtype} on {x.device}", frames


def _debug_report(forward: list, recompute: list) -> str:
    """The error debug mode raises: every tensor saved by the forward and by the
    recomputation, in order, each with the stack of the user code that saved it (PyTorch
    lists operators through its dispatcher; microtorch lists the saving ops)."""
    def section(entries: list, label: str) -> str:
        out = []
        for i, (line, frames) in enumerate(entries):
            out.append(f"{line}   ({i + 1} of {len(entries)} in {label})\n")
            out.extend(f"{f.filename}:{f.lineno}:{f.name}\n" for f in frames)
            out.append("\n")
        return "".join(out)

    return (
        "An error happened while unpacking tensors; dumping logs of latest computation\n"
        "because you passed `debug=True` to `torch.utils.checkpoint.checkpoint()`.\n\n"
        "Tensors saved during the original forward (and the code that saved them):\n\n"
        f"{section(forward, 'original')}"
        "Tensors saved during recomputation:\n\n"
        f"{section(recompute, 'recompute')}"
        " ERROR: Detected non-determinism while running activation checkpointing\n\n"
        " The tensors saved during the original forward differ from those saved during\n"
        " recomputation: different operators ran. Compare the two lists above (in the order\n"
        " they were saved) to find where they part.")


class _recomputation_hook(saved_tensors_hooks):  # noqa: N801
    """Hooks of a recomputation: each saved tensor fills the next holder of the frame."""

    def __init__(self, target_frame_ref, gid) -> None:
        def pack_hook(x):
            x = x.detach() if x.requires_grad else x
            frame = target_frame_ref()
            _internal_assert(frame is not None)
            idx = frame.recomp_counter[gid]
            if frame.debug_logs is not None:
                frame.debug_logs[1].append(_debug_entry(x))
            frame.recomp_counter[gid] += 1
            if idx >= len(frame.weak_holders):
                _internal_assert(not frame.early_stop)
                if not frame.forward_completed:
                    # A backward inside the checkpointed function, without early stop.
                    frame.ignore_saved_mismatch = True
                    return x
                raise CheckpointError("torch.utils.checkpoint: trying to save more tensors "
                                      "during recomputation than during the original forward "
                                      f"pass.\n{_DEBUG_TIP}")
            holder = frame.weak_holders[idx]()
            if holder is not None:  # (None: freed by a backward inside the forward)
                _internal_assert(holder.handles.get(gid) is None)
                holder.handles[gid] = _Handle()
                frame.recomputed[gid][holder.handles[gid]] = x
            if frame.early_stop and frame.recomp_counter[gid] == len(frame.weak_holders):
                raise _StopRecomputationError
            return x

        super().__init__(pack_hook, lambda x: x)


class _checkpoint_hook(saved_tensors_hooks):  # noqa: N801
    """Hooks of a checkpointed forward: save an empty holder; unpacking recomputes."""

    def __init__(self, frame: _CheckpointFrame) -> None:
        def pack_hook(x):
            holder = _Holder()
            frame.weak_holders.append(weakref.ref(holder))
            if frame.debug_logs is not None:
                frame.debug_logs[0].append(_debug_entry(x))
            if frame.metadata_fn is not None:
                with no_grad():
                    frame.x_metadatas.append(frame.metadata_fn(x))
            return holder

        def unpack_hook(holder: _Holder):
            gid = GraphExecGroup._get_current_group()
            if gid is None:
                task = engine.current_graph_task()
                gid = task.id if task is not None else int(uuid.uuid4())
            if not frame.is_recomputed[gid]:
                if frame.debug_logs is not None:
                    frame.debug_logs[1].clear()
                args = frame.get_inputs()
                try:
                    with _recomputation_hook(weakref.ref(frame), gid), enable_grad():
                        frame.recompute_fn(*args)
                except _StopRecomputationError:
                    pass
                frame.is_recomputed[gid] = True
                frame.check_recomputed_tensors_match(gid)
            _internal_assert(gid in holder.handles)
            if holder.handles[gid] is None:
                extra = ""
                if GraphExecGroup._get_current_group() is not None:
                    extra = ("Performing two backward calls that overlap (i.e. require the "
                             "same saved activation in order to compute gradients) is not "
                             "allowed while under the torch.utils.checkpoint.GraphExecGroup "
                             "context. ")
                raise CheckpointError(
                    "torch.utils.checkpoint: Unpack is being triggered for a tensor that was "
                    f"already unpacked once. {extra}If you are calling ctx.saved_tensors in "
                    "backward, make sure to do so only once. Otherwise please open an issue "
                    "with details on your use case.")
            _internal_assert(holder.handles[gid] in frame.recomputed[gid])
            ret = frame.recomputed[gid][holder.handles[gid]]
            holder.handles[gid] = None
            return ret

        if frame.unpack_error_cb is not None:
            def unpack_hook_with_error_cb(holder):
                try:
                    return unpack_hook(holder)
                except CheckpointError as e:
                    frame.unpack_error_cb(e)

            super().__init__(pack_hook, unpack_hook_with_error_cb)
        else:
            super().__init__(pack_hook, unpack_hook)


def _checkpoint_without_reentrant_generator(fn, preserve_rng_state=True,
                                            context_fn=noop_context_fn,
                                            determinism_check=_DEFAULT_DETERMINISM_MODE,
                                            debug=False, early_stop=True, *args, **kwargs):
    """The non-reentrant checkpoint around one call of ``fn``: yields once before the forward
    (hooks on) and once after it."""
    unpack_error_cb = logs = None
    if _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
        logs = ([], [])  # the tensors saved by the forward and by the last recomputation

        def unpack_error_cb(e):
            raise CheckpointError(_debug_report(*logs)) from e

    if determinism_check not in _allowed_determinism_checks_to_fns:
        raise ValueError(f"determinism_check should be one of "
                         f"{list(_allowed_determinism_checks_to_fns.keys())}, but got "
                         f"{determinism_check}")
    metadata_fn = _allowed_determinism_checks_to_fns[determinism_check]
    device_type = _infer_device_type(*args)
    forward_context, recompute_context = context_fn()
    device_autocast_kwargs, cpu_autocast_kwargs = _get_autocast_kwargs(device_type)
    rng = _RngState(device_type, args) if preserve_rng_state else None
    picks: list = []  # the forward's autotuning picks, made again by the recomputation

    def recompute_fn(*inputs) -> None:
        with rng.replay() if rng is not None else contextlib.nullcontext():
            with _autocast(device_type, device_autocast_kwargs), \
                    _autocast("cpu", cpu_autocast_kwargs), recompute_context, \
                    autotune.replaying(picks):
                fn(*inputs, **kwargs)

    frame = _CheckpointFrame(
        recompute_fn,
        _enable_checkpoint_early_stop if _enable_checkpoint_early_stop is not None
        else early_stop,
        unpack_error_cb, metadata_fn)
    frame.debug_logs = logs
    if not is_grad_enabled():
        yield
        return
    frame.save_inputs(*args)
    suppressed = False
    with _checkpoint_hook(frame), forward_context, autotune.recording(picks):
        try:
            yield
        except BaseException:
            suppressed = True
            raise
    if suppressed:
        raise RuntimeError("torch.utils.checkpoint: the forward context provided by context_fn "
                           "suppressed an exception raised during the checkpointed forward. "
                           "This is not supported because checkpoint cannot return a value for "
                           "a failed forward.")
    frame.forward_completed = True
    if rng is not None and not rng.had_device and _device_initialized(device_type):
        raise RuntimeError("PyTorch's device state was initialized in the forward pass of a "
                           "Checkpoint, which is not allowed. Please open an issue if you need "
                           "this feature.")


class GraphExecGroup:
    """Context manager: checkpointed regions reached by several backward calls inside it are
    recomputed at most once (the calls must need disjoint saved activations)."""

    _current: GraphExecGroup | None = None

    def __enter__(self) -> GraphExecGroup:
        if GraphExecGroup._current is not None:
            raise RuntimeError(f"GraphExecGroup contexts cannot be nested. Already inside group "
                               f"{GraphExecGroup._current}")
        GraphExecGroup._current = self
        return self

    def __exit__(self, *args: object) -> None:
        GraphExecGroup._current = None

    @classmethod
    def _get_current_group(cls) -> GraphExecGroup | None:
        return cls._current
