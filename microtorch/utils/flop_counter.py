"""``FlopCounterMode``: counts the FLOPs of matrix products, convolutions and attention inside a
``with`` block, forward and backward, per module (PyTorch's ``torch.utils.flop_counter``).

PyTorch counts at its dispatcher: every ATen op with a formula in ``flop_registry`` adds the
formula's count under the op (``aten.mm``, ``aten.convolution_backward`` ...) for each module
running (``ModuleTracker``). microtorch's ops are coarser (one ``MatMul`` node stands for mm,
bmm and matmul's decompositions, ``Linear`` for addmm or mm): ``_flop_ops`` watches the ops
through the profiler's hook points and translates each into the ATen calls PyTorch would have
made, with the shapes those calls would have had; the formulas below then count them. So the
keys and counts are PyTorch's, and ``custom_mapping`` / ``register_flop_formula`` take formulas
keyed by the same ops (``flop_counter.aten.mm``, or ``"aten.mm"``), or by an
``autograd.Function`` subclass for a user's op.
"""

from __future__ import annotations

import functools
import warnings
from collections import defaultdict
from collections.abc import Callable
from math import prod
from typing import Any

from .._tensor import Tensor
from ._flop_ops import OpPacket, aten, start_watching, stop_watching
from ._flop_table import format_table
from .module_tracker import ModuleTracker

__all__ = ["FlopCounterMode", "register_flop_formula"]

flop_registry: dict[Any, Callable] = {}


def get_shape(i):
    """A tensor's shape (as a tuple); anything else as it is."""
    return tuple(i.shape) if isinstance(i, Tensor) else i


def _shapes(tree):
    if isinstance(tree, (list, tuple)) and not isinstance(tree, Tensor):
        return type(tree)(_shapes(v) for v in tree) if not hasattr(tree, "_fields") else tree
    if isinstance(tree, dict):
        return {k: _shapes(v) for k, v in tree.items()}
    return get_shape(tree)


def shape_wrapper(f: Callable) -> Callable:
    """``f`` called with shapes in place of tensors, and the output's as ``out_shape``."""

    @functools.wraps(f)
    def nf(*args, out_val=None, **kwargs):
        return f(*_shapes(args), out_shape=_shapes(out_val), **_shapes(kwargs))

    return nf


def _normalize_target(target):
    """A registry key: an ``OpPacket`` (also given as ``"aten.mm"`` / ``"aten::mm"``), or a
    user's ``autograd.Function`` subclass."""
    if isinstance(target, OpPacket) or isinstance(target, type):
        return target
    if isinstance(target, str):
        namespace, _, name = target.replace("::", ".").rpartition(".")
        return OpPacket.get(namespace or "aten", name)
    raise ValueError(f"register_flop_formula(targets): expected each target to be an op "
                     f"(flop_counter.aten.<op> or 'aten.<op>') or an autograd.Function "
                     f"subclass, got {target} which is of type {type(target)}")


def register_flop_formula(targets, get_raw: bool = False) -> Callable:
    """Decorator registering a FLOP formula for ``targets`` (one op or a list): called with the
    op's argument shapes and ``out_shape`` (with ``get_raw``: the values as they are and
    ``out_val``). A second registration for an op raises."""

    def register_fun(flop_formula: Callable) -> Callable:
        if not get_raw:
            flop_formula = shape_wrapper(flop_formula)
        for target in targets if isinstance(targets, (list, tuple)) else [targets]:
            key = _normalize_target(target)
            if key in flop_registry:
                raise RuntimeError(f"duplicate registrations for {key}")
            flop_registry[key] = flop_formula
        return flop_formula

    return register_fun


# -- the formulas (NB, as PyTorch: a multiply-add counts 2, the bias's additions are not
# counted) ------------------------------------------------------------------------------------
@register_flop_formula(aten.mm)
def mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """Count flops for matmul."""
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise AssertionError(f"matmul: inner dimensions must match (k == k2), got {k} and {k2}")
    return 2 * m * k * n


@register_flop_formula(aten.addmm)
def addmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """Count flops for addmm (its product's)."""
    return mm_flop(a_shape, b_shape)


@register_flop_formula(aten.bmm)
def bmm_flop(a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """Count flops for the bmm operation."""
    b, m, k = a_shape
    b2, k2, n = b_shape
    if b != b2:
        raise AssertionError(f"bmm: batch dimensions must match (b == b2), got {b} and {b2}")
    if k != k2:
        raise AssertionError(f"bmm: inner dimensions must match (k == k2), got {k} and {k2}")
    return 2 * b * m * k * n


@register_flop_formula(aten.baddbmm)
def baddbmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """Count flops for the baddbmm operation (its products')."""
    return bmm_flop(a_shape, b_shape)


@register_flop_formula(aten._scaled_mm)
def _scaled_mm_flop(a_shape, b_shape, scale_a_shape, scale_b_shape, bias_shape=None,
                    scale_result_shape=None, out_dtype=None, use_fast_accum=False,
                    out_shape=None, **kwargs) -> int:
    """Count flops for _scaled_mm."""
    return mm_flop(a_shape, b_shape)


def conv_flop_count(x_shape: list[int], w_shape: list[int], out_shape: list[int],
                    transposed: bool = False) -> int:
    """Count flops for convolution: for each point of the output's spatial dims (the input's,
    transposed) the filter's points times both channel counts, times the batch. Only the
    multiplications (and their additions) count: the bias is ignored."""
    batch = x_shape[0]
    spatial = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *filter_size = w_shape
    return 2 * prod(spatial) * prod(filter_size) * batch * c_out * c_in


@register_flop_formula([aten.convolution, aten._convolution, aten.cudnn_convolution,
                        aten._slow_conv2d_forward, aten.convolution_overrideable])
def conv_flop(x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed, *args,
              out_shape=None, **kwargs) -> int:
    """Count flops for convolution."""
    return conv_flop_count(x_shape, w_shape, out_shape, transposed=transposed)


def _swap_batch_channels(shape) -> list:
    return [shape[1], shape[0], *shape[2:]]


@register_flop_formula(aten.convolution_backward)
def conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation,
                       transposed, _output_padding, _groups, output_mask, out_shape,
                       **kwargs) -> int:
    """Count flops for convolution_backward: the input's gradient is the transposed
    convolution of the output's gradient with the weight (a convolution, for a transposed
    one); the weight's gradient a convolution of the input (batch and channels swapped) with
    the output's gradient (of the output's gradient with the input, for a transposed one)."""
    count = 0
    if output_mask[0]:
        count += conv_flop_count(grad_out_shape, w_shape, get_shape(out_shape[0]),
                                 not transposed)
    if output_mask[1]:
        grad_w = _swap_batch_channels(get_shape(out_shape[1]))
        x_t, g_t = _swap_batch_channels(x_shape), _swap_batch_channels(grad_out_shape)
        count += conv_flop_count(g_t, x_t, grad_w) if transposed else \
            conv_flop_count(x_t, g_t, grad_w)
    return count


def sdpa_flop_count(query_shape, key_shape, value_shape) -> int:
    """Count flops for self-attention: the scores (q @ k^T) and the output (scores @ v), each
    key/value head shared by ``h_q / h_kv`` query heads (grouped-query attention)."""
    b, h_q, s_q, d_q = query_shape
    b2, h_kv, s_k, d_k = key_shape
    b3, h_v, s_v, d_v = value_shape
    if not (b == b2 == b3 and h_kv == h_v and d_q == d_k and s_k == s_v):
        raise AssertionError(f"sdpa_flop_count: query/key/value shapes are incompatible: "
                             f"q={query_shape}, k={key_shape}, v={value_shape}")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(f"sdpa_flop_count: query heads ({h_q}) must be a multiple of "
                             f"key/value heads ({h_kv})")
    heads = b * h_q
    return bmm_flop((heads, s_q, d_q), (heads, d_q, s_k)) + \
        bmm_flop((heads, s_q, s_k), (heads, s_k, d_v))


@register_flop_formula([aten._scaled_dot_product_efficient_attention,
                        aten._scaled_dot_product_flash_attention,
                        aten._scaled_dot_product_cudnn_attention])
def sdpa_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    """Count flops for self-attention (a causal mask is not taken off, as PyTorch's)."""
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape) -> int:
    """Count flops for self-attention backward: the scores recomputed, then the gradients of
    the scores, of v, of q and of k, one batched product each."""
    b, h_q, s_q, d_q = query_shape
    b2, h_kv, s_k, d_k = key_shape
    b3, h_v, s_v, d_v = value_shape
    b4, h_g, s_g, d_g = grad_out_shape
    if not (b == b2 == b3 == b4 and h_kv == h_v and h_q == h_g):
        raise AssertionError("sdpa_backward_flop_count: batch/heads mismatch among tensors")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(f"sdpa_backward_flop_count: query heads ({h_q}) must be a "
                             f"multiple of key/value heads ({h_kv})")
    if not (d_q == d_k and d_v == d_g and s_k == s_v and s_q == s_g):
        raise AssertionError("sdpa_backward_flop_count: grad_out/value/key/query shapes are "
                             "incompatible")
    n = b * h_q
    return (bmm_flop((n, s_q, d_q), (n, d_q, s_k)) + bmm_flop((n, s_q, d_v), (n, d_v, s_k))
            + bmm_flop((n, s_k, s_q), (n, s_q, d_v)) + bmm_flop((n, s_q, s_k), (n, s_k, d_q))
            + bmm_flop((n, d_q, s_q), (n, s_q, s_k)))


@register_flop_formula([aten._scaled_dot_product_efficient_attention_backward,
                        aten._scaled_dot_product_flash_attention_backward,
                        aten._scaled_dot_product_cudnn_attention_backward])
def sdpa_backward_flop(grad_out_shape, query_shape, key_shape, value_shape, *args,
                       out_shape=None, **kwargs) -> int:
    """Count flops for self-attention backward."""
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


# -- the table ---------------------------------------------------------------------------------
suffixes = ["", "K", "M", "B", "T"]


def get_suffix_str(number: int) -> str:
    """The unit a count is shown in: one per 3 digits past the first, 1001M rather than 1.001B
    (one digit of overflow)."""
    return suffixes[max(0, min(len(suffixes) - 1, (len(str(number)) - 2) // 3))]


def convert_num_with_suffix(number: int, suffix: str) -> str:
    """``number`` in the unit ``suffix``, 3 decimals."""
    index = suffixes.index(suffix)
    return f"{number / 1000 ** index:.3f}" + suffix


def convert_to_percent_str(num: int, denom: int) -> str:
    """``num / denom`` as a percentage with 2 decimals ("0%" for a zero total)."""
    return "0%" if denom == 0 else f"{num / denom:.2%}"


def normalize_tuple(x) -> tuple:
    """``x`` as a tuple (a non-tuple wrapped)."""
    return x if isinstance(x, tuple) else (x,)


class FlopCounterMode:
    """Counts the FLOPs of the ops run inside its ``with`` block (forward and backward), per
    module: ``get_total_flops()``, ``get_flop_counts()`` (module path -> op -> count) and
    ``get_table(depth)``, printed on exit when ``display``. ``custom_mapping`` adds or replaces
    formulas (keyed like ``register_flop_formula``'s targets); ``mods`` is not needed (deprecated
    in PyTorch: every module is tracked)."""

    def __init__(self, mods=None, depth: int = 2, display: bool = True,
                 custom_mapping: dict | None = None) -> None:
        self.flop_counts: dict[str, dict[Any, int]] = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        if mods is not None:
            warnings.warn("mods argument is not needed anymore, you can stop passing it",
                          stacklevel=2)
        custom = {_normalize_target(k): v if getattr(v, "_get_raw", False) else
                  shape_wrapper(v) for k, v in (custom_mapping or {}).items()}
        self.flop_registry = {**flop_registry, **custom}
        self.mod_tracker = ModuleTracker()
        self._active = False

    def get_total_flops(self) -> int:
        """All FLOPs counted (those of ``"Global"``)."""
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict[str, dict[Any, int]]:
        """The counts as ``{module path: {op: flops}}``, ``"Global"`` holding every count."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth: int | None = None) -> str:
        """The counts as PyTorch prints them: modules down to ``depth`` levels (sorted by
        path), each with its ops, the FLOPs in the unit of the total and the share of it; a
        ``Global`` section first when some FLOPs ran outside every module."""
        depth = self.depth if depth is None else depth
        if depth is None:
            depth = 999999
        total = self.get_total_flops()
        unit = get_suffix_str(total)
        covers_all = False  # a module holds every FLOP: no Global section needed

        def rows_of(name: str, indent: int) -> list[list[str]]:
            nonlocal covers_all
            counts = self.flop_counts[name]
            flops = sum(counts.values())
            covers_all |= flops >= total
            pad = " " * indent
            rows = [[pad + name, convert_num_with_suffix(flops, unit),
                     convert_to_percent_str(flops, total)]]
            rows += [[pad + " - " + str(op), convert_num_with_suffix(v, unit),
                      convert_to_percent_str(v, total)] for op, v in counts.items()]
            return rows

        rows: list[list[str]] = []
        for name in sorted(self.flop_counts):
            level = name.count(".") + 1
            if name != "Global" and level <= depth:
                rows += rows_of(name, level - 1)
        if "Global" in self.flop_counts and not covers_all:
            for row in rows:
                row[0] = " " + row[0]
            rows = rows_of("Global", 0) + rows
        if not rows:
            rows = [["Global", "0", "0%"]]
        return format_table(rows, ["Module", "FLOP", "% Total"], ("left", "right", "right"))

    # NB: not reentrant (as PyTorch's)
    def __enter__(self) -> FlopCounterMode:
        self.flop_counts.clear()
        self.mod_tracker.__enter__()
        start_watching(self)
        self._active = True
        return self

    def __exit__(self, *args) -> None:
        if not self._active:
            raise AssertionError("Internal error: FlopCounter.__exit__ called but mode is None")
        self._active = False
        stop_watching(self)
        self.mod_tracker.__exit__()
        if self.display:
            print(self.get_table(self.depth))

    def _count_flops(self, func_packet, out, args: tuple, kwargs: dict):
        """Add ``func_packet``'s count for these arguments (shapes or tensors) to every module
        running now; ops without a formula count nothing."""
        formula = self.flop_registry.get(func_packet)
        if formula is not None:
            count = formula(*args, **kwargs, out_val=out)
            for parent in set(self.mod_tracker.parents):
                self.flop_counts[parent][func_packet] += count
        return out
