"""Graph nodes of convolution.

Convolution copies the strided views of the padded input once into im2col columns laid out for
a few wide GEMMs (see ``Conv2d``; the batch layout of the GEMMs follows a rule of shapes,
``_layout``); gradients go back with one strided slice-add per kernel
offset. The backward passes are themselves differentiable nodes (any order): convolution's are
convolutions.

This module must not import ``microtorch.nn`` (one direction of dependency).
"""

from __future__ import annotations

import time

import numpy as np

from ..autograd.function import Function
from ..autograd.grad_mode import state
from ..backend import compiled
from ..backend.autotune import choice, split_rows
from ..backend.blas import last_axis_sums, small_products
from ..backend.threads import gemm_threads, get_num_threads, one_blas_thread
from ._util import _needs, _wrap, xp_of
from ._windows import _col2im, _crop_hw, _pad_hw

__all__ = ["Conv2d", "ConvInputGrad", "ConvWeightGrad"]


# Fewest GEMM columns per block of images: much narrower GEMMs run far below BLAS speed.
_GEMM_COLUMNS = 512

# Fewest output pixels for one image per block on the CPU, where the batch runs in chunks of
# images on the pool's threads (``_over_image_chunks``): each thread's products are narrow, but
# its columns are still in cache when multiplied and no output needs a reorder. Measured on an
# Intel Xeon VM (2 threads, 2026-12-03), the CNN benchmark's 16 -> 32 convolution on 14x14
# images (64 of them) takes 1.23 ms forward by chunks of 8 images, 1.80 ms as one GEMM over the
# batch (BLAS on two threads); see docs/architecture.md, "Tuning constants".
_IMAGE_COLUMNS = 128

# Most bytes of columns (im2col's, or the input gradient's) per chunk of ``_over_image_chunks``,
# which otherwise makes one chunk per thread: every chunk's NumPy calls take the GIL between
# them, and two threads contend for it less in fewer, larger calls (two processes each running
# the CNN's 16 -> 32 input gradient on one thread take 2.7 ms each, as alone; two threads of one
# process took 2.1 ms for both halves, chunks of 8 images). Measured on the eighth Intel VM
# (2026-12-03), 64 images, ms, chunks of 8 / 16 / 32 / 64 images: two threads, 16 -> 32 on
# 14x14 forward 1.53 / 1.45 / 1.34 / 2.11, forward and backward 5.15 / 4.67 / 4.37 / 7.77, 1 ->
# 16 on 28x28 forward and backward 1.19 / 1.14 / 1.10 / 1.05; one thread 2.39 / 2.24 / 2.21 /
# 2.09, 7.22 / 7.02 / 6.83 / 7.34, 1.16 / 1.15 / 1.11 / 1.04. Again with the compiled im2col
# and col2im (2026-12-04), the 16 -> 32 backward on two threads at 16 / 4 / 2 / 1 MiB a chunk:
# 1734 / 1883 / 1929 / 2589 us.
_CHUNK_BYTES = 1 << 24

# Multiply-adds per thread below which the chunks run on one thread: small products are bound
# by moving memory, and two threads contend for it. Measured on the Intel Xeon VM: the CNN's
# first convolution, 1 -> 16 channels on 28x28, 7M multiply-adds, 0.42 ms forward on one
# thread, 0.61 ms shared; 14.5M (8 -> 16 on 14x14, 64 images) even; the second, 58M, 1.85 vs
# 1.22 ms. So is the batch's layout: below 2 * _CHUNK_MIN_MACS one GEMM over the batch keeps
# its backward faster than one thread's per-image products (16 -> 16 on 14x14, 32 images:
# 1.28 vs 1.59 ms).
_CHUNK_MIN_MACS = 1 << 23


def _images_per_block(n: int, p: int, xp=None, macs: int = 0) -> int:
    """The smallest divisor of ``n`` whose images, ``p`` output pixels each, give at least
    _GEMM_COLUMNS columns (``n`` itself when none does); on the CPU (``xp`` NumPy) one image
    from _IMAGE_COLUMNS pixels when its ``macs`` multiply-adds are shared by chunks of images
    (``_by_image_chunks``)."""
    if xp is np and p >= _IMAGE_COLUMNS and _chunks_shared(n, macs):
        return 1
    nb = max(1, min(n, -(-_GEMM_COLUMNS // p)))
    while n % nb:
        nb += 1
    return nb


def _conv_weight(wa, g: int):
    """(O, Cg, KH, KW) weights as (G, Og, KH*KW*Cg): kernel offset before channel, the row
    order of the im2col columns."""
    o, cg, kh, kw = wa.shape
    return wa.reshape(g, o // g, cg, kh, kw).transpose(0, 1, 3, 4, 2).reshape(g, o // g, -1)


def _conv_out_hw(h: int, w: int, kh: int, kw: int, stride, pads, dilation) -> tuple[int, int]:
    top, bottom, left, right = pads
    return ((h + top + bottom - dilation[0] * (kh - 1) - 1) // stride[0] + 1,
            (w + left + right - dilation[1] * (kw - 1) - 1) // stride[1] + 1)


def _is_pointwise(nb: int, kh: int, kw: int, stride, pads) -> bool:
    """A 1x1, stride-1, unpadded convolution over one image per block: its columns are the
    input itself."""
    return nb == 1 and kh == kw == 1 and tuple(stride) == (1, 1) and not any(pads)


def _im2col(xa, kh: int, kw: int, stride, pads, dilation, g: int, oh: int, ow: int, nb: int,
            ones_row: bool = False):
    """The (B, G, KH*KW*Cg, Nb*OH*OW) columns of the input: kernel offset before channel.
    ``ones_row``: with one more row of ones at the end (the bias's, see ``Conv2d.forward``)."""
    n, c = xa.shape[:2]
    cg, p = c // g, oh * ow
    if _is_pointwise(nb, kh, kw, stride, pads):
        return xa.reshape(n, g, cg, p)
    full = xp_of(xa).empty((n // nb, g, kh * kw * cg + ones_row, nb * p), dtype=xa.dtype)
    _fill_columns(full, xa, kh, kw, stride, pads, dilation, g, oh, ow, nb, ones_row,
                  split=True)
    return full


def _fill_columns(full, xa, kh: int, kw: int, stride, pads, dilation, g: int, oh: int,
                  ow: int, nb: int, ones_row: bool, *, split: bool) -> None:
    """``_im2col``'s columns of the images ``xa`` written into ``full``; ``split``: the copy
    shared between threads (else on the calling thread). The compiled loop (``compiled``)
    where there is one for the dtype, else a copy of a strided view of the padded images:
    the same elements either way."""
    n, c = xa.shape[:2]
    cg, b = c // g, n // nb
    k = kh * kw * cg
    xp = xp_of(xa)
    if ones_row:
        full[:, :, k] = 1
    fused = compiled.kernels_for(xp, xa.dtype)
    if fused is not None and full.flags.c_contiguous:
        xc = np.ascontiguousarray(xa)
        blocks = full.reshape(b, g, full.shape[2], nb, oh * ow)

        def fill(span) -> None:
            fused.im2col(xc, blocks, kh, kw, *stride, pads[0], pads[2], *dilation, oh, ow,
                         *span)
        _over_image_spans(fill, (xa.shape, full.shape, xa.dtype.str), "im2col", b, nb,
                          full.size if split else 0)
        return
    xpad = _pad_hw(xa, pads)
    s0, s1, s2, s3 = xpad.strides
    win = xp.lib.stride_tricks.as_strided(  # (B, G, KH, KW, Cg, Nb, OH, OW), no copy
        xpad, (b, g, kh, kw, cg, nb, oh, ow),
        (nb * s0, cg * s1, dilation[0] * s2, dilation[1] * s3, s1, s0, stride[0] * s2,
         stride[1] * s3))
    cols = full[:, :, :k].reshape(win.shape)  # (a view: only axes split)
    if not split:
        cols[...] = win
        return

    def copy(sl) -> None:
        cols[sl] = win[sl]  # the one copy of the input

    _over_images(xp, "im2col", (xa.shape, cols.shape, xa.dtype.str), copy, b, nb, 5,
                 cols.size)


# Whether the data movement of a convolution (im2col, col2im) shares its images between
# threads: whenever each thread gets _MOVES_MIN_WORK elements (or by timing, opted in); images
# are independent, so the result is exact either way.
_MOVES = {"im2col": choice("conv2d_im2col_images", ("threads", "one")),
          "col2im": choice("conv2d_col2im_images", ("threads", "one")),
          "chunks": choice("conv2d_image_chunks", ("threads", "one"))}
# Elements per thread below which one thread is faster: set inside the crossovers measured on
# both CPU families (docs/architecture.md, "Tuning constants").
_MOVES_MIN_WORK = 1 << 17


def _over_image_spans(fn, key: tuple, phase: str, b: int, nb: int, work: int) -> None:
    """``fn((first block, last block, first image, last image))`` over the B blocks of Nb
    images, shared between threads by ``phase``'s choice when ``work`` elements allow (0: on
    the calling thread alone): the blocks, or the images of one block (none for an empty
    batch: the compiled loops check no bounds)."""
    def part(lo: int, hi: int) -> None:
        fn((0, 1, lo, hi) if b == 1 else (lo, hi, 0, nb))

    count = nb if b == 1 else b
    if work:
        split_rows(_MOVES[phase], key, part, count, work, _MOVES_MIN_WORK)
    else:
        part(0, count)


def _over_images(xp, phase: str, key: tuple, fn, b: int, nb: int, nb_axis: int,
                 work: int) -> None:
    """``fn(index)`` over the images of (B, ..., Nb, ...) arrays, as ``_over_image_spans``
    shares them: an index of the blocks (axis 0), or of the one block's images (axis
    ``nb_axis``); on a GPU in one call."""
    def part(span) -> None:
        blk_lo, blk_hi, m_lo, m_hi = span
        fn((slice(blk_lo, blk_hi),) if b != 1
           else (slice(None),) * nb_axis + (slice(m_lo, m_hi),))

    _over_image_spans(part, key, phase, b, nb, work if xp is np else 0)


def _by_image_chunks(arr, n: int, nb: int, macs: int | None = None) -> bool:
    """Whether a convolution's per-image work runs in chunks of images (``_over_image_chunks``):
    one image per block of float32 or float64 NumPy arrays (BLAS dtypes), four or more of them
    (else BLAS's own threads share each product), and, given ``macs``, enough multiply-adds to
    share. A forward gains from chunks even on one thread (its columns multiplied while in
    cache: the CNN's first convolution 0.42 vs 0.72 ms), a backward only when shared."""
    return (nb == 1 and type(arr) is np.ndarray and arr.dtype in (np.float32, np.float64)
            and (n >= 4 if macs is None else _chunks_shared(n, macs)))


def _chunks_shared(n: int, macs: int) -> bool:
    """Whether ``n`` images of ``macs`` multiply-adds in all make chunks worth sharing between
    two threads or more (``_CHUNK_MIN_MACS`` each): four images or more."""
    return n >= 4 and macs >= 2 * _CHUNK_MIN_MACS


def _over_image_chunks(key: tuple, fn, n: int, macs: int, image_bytes: int) -> None:
    """``fn(lo, hi)`` over chunks of images, one per thread that shares them, each holding
    at most ``_CHUNK_BYTES`` of columns (``image_bytes`` an image), the chunks shared between
    the pool's threads when there are ``_CHUNK_MIN_MACS`` multiply-adds (``macs`` in all) for
    each, BLAS on one thread in each. Every image's products and sums are its own, so the
    result is the same for any chunks and any share (tested at 1, 2 and 3 threads)."""
    one_blas_thread()
    threads = get_num_threads() if macs >= 2 * _CHUNK_MIN_MACS else 1
    size = max(1, min(-(-n // threads), _CHUNK_BYTES // max(1, image_bytes)))
    chunks = -(-n // size)

    def run(lo: int, hi: int) -> None:
        for chunk in range(lo, hi):
            fn(chunk * size, min(n, (chunk + 1) * size))

    split_rows(_MOVES["chunks"], key, run, chunks, macs, _CHUNK_MIN_MACS)


def _grad_columns(ga, g: int, nb: int):
    """An (N, O, OH, OW) output gradient laid out like the GEMM output, (B, G, Og, Nb*OH*OW):
    a view when Nb = 1, else one copy in runs of OH*OW."""
    n, o, oh, ow = ga.shape
    p, b = oh * ow, n // nb
    if nb == 1:
        return ga.reshape(b, g, o // g, p)
    xp = xp_of(ga)
    gm = xp.empty((b, o, nb, p), dtype=ga.dtype)
    gm[...] = ga.reshape(b, nb, o, p).transpose(0, 2, 1, 3)
    return gm.reshape(b, g, o // g, nb * p)


def _conv_input_grad(gm, wa, x_shape, stride, pads, dilation, g: int, oh: int, ow: int,
                     nb: int):
    """The input gradient (N, C, H, W) of a convolution from its gradient columns
    (``_conv_input_grad_of``), in chunks of images on the pool's threads when
    ``_by_image_chunks``."""
    n = x_shape[0]
    macs = gm.size * wa[0].size
    if _by_image_chunks(gm, n, nb, macs):
        gx = np.empty(x_shape, dtype=gm.dtype)
        _over_image_chunks((x_shape, wa.shape, gm.dtype.str, stride, pads, dilation),
                           _input_grad_chunk(gx, gm, wa, stride, pads, dilation, g, oh, ow, nb),
                           n, macs, _input_grad_image_bytes(gm, wa, g))
        return gx
    return _conv_input_grad_of(gm, wa, x_shape, stride, pads, dilation, g, oh, ow, nb)


def _input_grad_chunk(gx, gm, wa, stride, pads, dilation, g: int, oh: int, ow: int, nb: int):
    """``fn(lo, hi)`` writing images lo:hi of the input gradient into ``gx``."""
    def chunk(lo: int, hi: int) -> None:
        _conv_input_grad_of(gm[lo:hi], wa, (hi - lo, *gx.shape[1:]), stride, pads, dilation, g,
                            oh, ow, nb, out=gx[lo:hi])
    return chunk


def _input_grad_image_bytes(gm, wa, g: int) -> int:
    """One image's gradient columns, in bytes (``gm`` one image per block)."""
    return wa[0].size * g * gm.shape[-1] * gm.itemsize


def _conv_grads_by_chunks(gm, wa, cols, x_shape, stride, pads, dilation, g: int, oh: int,
                          ow: int):
    """The input, weight and bias (or None) gradients of a backward whose images run in chunks: both
    passes over a chunk before the next, one share of images per thread (the columns of a
    chunk reused while in cache, one hand-over of the pool instead of two: the CNN
    benchmark's 16 -> 32 convolution, 64 images, two threads, 2.65 -> 2.41 ms). The same
    products and sums as ``_conv_input_grad`` and ``_conv_weight_grad``."""
    n = x_shape[0]
    gx = np.empty(x_shape, dtype=gm.dtype)
    input_chunk = _input_grad_chunk(gx, gm, wa, stride, pads, dilation, g, oh, ow, 1)
    parts, weight_chunk = _weight_parts(cols, gm)

    def chunk(lo: int, hi: int) -> None:
        input_chunk(lo, hi)
        weight_chunk(lo, hi)

    _over_image_chunks((x_shape, wa.shape, gm.dtype.str, stride, pads, dilation, "both"),
                       chunk, n, 2 * gm.size * wa[0].size,
                       _input_grad_image_bytes(gm, wa, g) + cols[0].nbytes)
    return gx, *_weight_from_parts(parts.sum(0), wa.shape, g, gm.dtype)


def _conv_input_grad_of(gm, wa, x_shape, stride, pads, dilation, g: int, oh: int, ow: int,
                        nb: int, out=None):
    """``_conv_input_grad`` on the calling thread's BLAS setting, for all of ``gm``'s images
    (written into ``out`` when given): the gradient columns by one product per block and
    group, then col2im, the compiled loop (``compiled``) where there is one for the dtype,
    else one strided slice-add per kernel offset over zeroed padded images: the same sums in
    the same order."""
    n, c, h, w = x_shape
    o, cg, kh, kw = wa.shape
    xp = xp_of(gm)
    b = n // nb
    gcols = _in_dtype(xp.matmul(_conv_weight(wa, g).transpose(0, 2, 1), gm), gm.dtype)
    key = (x_shape, wa.shape, gm.dtype.str, stride, pads, dilation, nb)
    fused = compiled.kernels_for(xp, gm.dtype)
    if _is_pointwise(nb, kh, kw, stride, pads):
        gx = gcols.reshape(n, c, h, w)
    elif fused is not None:
        gx = np.empty(x_shape, dtype=gm.dtype) if out is None else out
        blocks = gcols.reshape(b, g, kh * kw * cg, nb, oh * ow)

        def add(span) -> None:
            fused.col2im(blocks, gx, kh, kw, *stride, pads[0], pads[2], *dilation, oh, ow,
                         *span)
        _over_image_spans(add, key, "col2im", b, nb, gx.size)
    else:
        gx = _col2im_by_slices(gcols, x_shape, kh, kw, stride, pads, dilation, g, oh, ow, nb,
                               key)
    if out is not None and gx is not out:
        out[...] = gx
        return out
    return gx


def _col2im_by_slices(gcols, x_shape, kh: int, kw: int, stride, pads, dilation, g: int,
                      oh: int, ow: int, nb: int, key: tuple):
    """The (N, C, H, W) input gradient from (B, G, K, Nb OH OW) gradient columns: one
    strided slice-add per kernel offset over zeroed padded images, then the crop."""
    n, c, h, w = x_shape
    cg, b = c // g, n // nb
    xp = xp_of(gcols)
    top, bottom, left, right = pads
    gpad = xp.zeros((b, g, cg, nb, h + top + bottom, w + left + right), dtype=gcols.dtype)
    gcols = gcols.reshape(b, g, kh, kw, cg, nb, oh, ow).transpose(2, 3, 0, 1, 4, 5, 6, 7)

    def add(sl) -> None:
        _col2im(gpad[sl], gcols[(slice(None), slice(None)) + sl], *stride, *dilation)

    _over_images(xp, "col2im", key, add, b, nb, 3, gpad.size)
    gx = _crop_hw(gpad, pads, h, w)  # (B, G, Cg, Nb, H, W)
    if nb > 1:
        gx = gx.transpose(0, 3, 1, 2, 4, 5)
    return xp.ascontiguousarray(gx).reshape(n, c, h, w)


def _conv_weight_grad(cols, gm, w_shape, g: int):
    """(weight gradient (O, Cg, KH, KW), bias gradient or None): ``_weight_from_parts``."""
    xp = xp_of(gm)
    # cols @ gm^T is faster in OpenBLAS than gm @ cols^T (by about a third here); and faster
    # still where gm^T copied to rows takes the small-matrix kernels (``small_products``; the
    # CNN benchmark's 16 -> 32 channels, 64 images: 1591 -> 1369 us on one thread).
    gm_t = gm.transpose(0, 1, 3, 2)
    n, macs = len(cols), cols.size * gm.shape[2]
    product = small_products if xp is np else xp.matmul
    if n == 1:
        gw = product(cols[0], gm_t[0])
    elif _by_image_chunks(gm, n, 1, macs):  # each image's product by chunks, then the same sum
        parts, chunk = _weight_parts(cols, gm)
        _over_image_chunks((cols.shape, gm.shape, gm.dtype.str), chunk, n, macs,
                           cols[0].nbytes)
        gw = parts.sum(0)
    else:
        gw = product(cols, gm_t).sum(0)
    return _weight_from_parts(gw, w_shape, g, gm.dtype)


def _weight_parts(cols, gm):
    """Each image's weight product, (N, G, K, Og), and ``fn(lo, hi)`` writing images lo:hi's
    products cols @ gm^T into it."""
    parts = np.empty(cols.shape[:3] + gm.shape[2:3], dtype=gm.dtype)
    gm_t = gm.transpose(0, 1, 3, 2)

    def chunk(lo: int, hi: int) -> None:
        small_products(cols[lo:hi], gm_t[lo:hi], out=parts[lo:hi])
    return parts, chunk


def _weight_from_parts(gw, w_shape, g: int, dtype):
    """The (G, KH*KW*Cg, Og) sum of the products as an (O, Cg, KH, KW) weight gradient, and
    the bias gradient (O,) from one more row, the columns' row of ones (else None): no pass of
    its own over the output gradient (64 x 16 x 28 x 28: both gradients 432 -> 304 us)."""
    o, cg, kh, kw = w_shape
    bias = None
    if gw.shape[1] > kh * kw * cg:  # (each image's pixels summed by its product, then images)
        bias = _in_dtype(xp_of(gw).ascontiguousarray(gw[:, -1]).reshape(o), dtype)
        gw = gw[:, :-1]
    gw = gw.reshape(g, kh, kw, cg, o // g).transpose(0, 4, 3, 1, 2)  # (G, K, Og) to OIHW
    return _in_dtype(xp_of(gw).ascontiguousarray(gw).reshape(o, cg, kh, kw), dtype), bias


def _channel_sums(ga):
    """Per channel, the sum over images and pixels of an (N, C, H, W) output gradient (the bias
    gradient): each image's channels by BLAS (``last_axis_sums``), then over the images."""
    n, c = ga.shape[:2]
    return last_axis_sums(ga.reshape(n, c, -1))[..., 0].sum(0)


def _in_dtype(arr, dtype):
    """A product back in its operands' dtype (ml_dtypes multiplies bfloat16 in float32)."""
    return arr if arr.dtype == dtype else arr.astype(dtype)


class Conv2d(Function):
    """2-D cross-correlation as GEMMs over im2col columns; backward by GEMMs and col2im.

    The batch is cut into B blocks of Nb images (``_images_per_block``) and the columns laid
    out (B, G, KH*KW*Cg, Nb*OH*OW), kernel offset before channel. So every copy (im2col,
    output and gradient reorders, col2im) moves runs of OW or more elements, not KW; each
    GEMM is one BLAS call per block and group; with Nb = 1 the GEMM output already is the
    (N, O, OH, OW) result; and col2im adds one contiguous block per kernel offset. A 1x1,
    stride-1, unpadded convolution with Nb = 1 uses the input itself as its columns.

    Convolution, its input gradient (``ConvInputGrad``, also the transposed convolution) and
    its weight gradient (``ConvWeightGrad``) are three nodes whose backward passes are made of
    each other, as in PyTorch's ``convolution_backward``: under ``create_graph`` the gradient
    is itself differentiable, to any order. A plain backward reuses the forward's columns.
    """

    torch_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, x, weight, bias, stride, pads, dilation, groups):
        xa, wa = x._data, weight._data
        if xa.dtype != wa.dtype:
            raise RuntimeError(f"Input type ({x.dtype}) and weight type ({weight.dtype}) should "
                               f"be the same")
        xp = xp_of(xa)
        n = xa.shape[0]
        o, cg, kh, kw = wa.shape
        g = groups
        oh, ow = _conv_out_hw(*xa.shape[2:], kh, kw, stride, pads, dilation)
        if oh <= 0 or ow <= 0:
            raise RuntimeError(f"Calculated output size: ({o}x{oh}x{ow}). Output size is too "
                               f"small")
        p = oh * ow
        nb, tune = _layout(x, weight, bias, stride, pads, dilation, g, p)
        b = n // nb
        if xp is np:  # (backend.threads: b * g products, one per block and group)
            gemm_threads(o // g, cg * kh * kw, nb * p, b * g)
        t0 = time.perf_counter()
        # One image per block: the GEMM's output is the result, and the bias goes into it as
        # one more column of the weights against a row of ones in the columns, the last term
        # of each sum (no pass over the result after it). OpenBLAS's SkylakeX kernels add a
        # block of K in order, which gives the bits of the bias added after the product; its
        # Haswell kernels may round some of those sums otherwise (tests/test_conv_bias.py).
        bias_in_gemm = (nb == 1 and bias is not None
                        and not _is_pointwise(nb, kh, kw, stride, pads))
        wmat = _conv_weight(wa, g)
        if bias_in_gemm:
            wmat = xp.concatenate([wmat, bias._data.reshape(g, o // g, 1).astype(
                wmat.dtype, copy=False)], axis=2)
        if _by_image_chunks(xa, n, nb) and not _is_pointwise(nb, kh, kw, stride, pads):
            cols, out = _conv_by_image_chunks(xa, wmat, kh, kw, stride, pads, dilation, g,
                                              oh, ow, bias_in_gemm)
        else:
            cols = _im2col(xa, kh, kw, stride, pads, dilation, g, oh, ow, nb, bias_in_gemm)
            out = xp.matmul(wmat, cols)  # (B, G, Og, Nb*P)
        ctx.bias_row = bias_in_gemm  # (cols keep the ones row: the bias's gradient, below)
        if nb == 1:
            out = out.reshape(n, o, oh, ow)
            if bias is not None and not bias_in_gemm:
                out += bias._data.reshape(1, o, 1, 1)
        else:  # (B, O, Nb, P) -> (B, Nb, O, P), the bias added on the way
            blocks = out.reshape(b, o, nb, p).transpose(0, 2, 1, 3)
            out = xp.empty((b, nb, o, p), dtype=out.dtype)
            if bias is None:
                out[...] = blocks
            else:
                xp.add(blocks, bias._data.reshape(o, 1), out=out)
            out = out.reshape(n, o, oh, ow)
        # A 1x1 kernel's columns are the input: keep only the tensor, so in-place changes
        # raise. Otherwise the columns serve a plain backward; x, a double backward.
        ctx.save_for_backward(weight, x, None if _is_pointwise(nb, kh, kw, stride, pads)
                              else cols)
        ctx.geom = stride, pads, dilation, g, nb
        if tune is not None:  # measuring the layouts: the backward adds its time, if one comes
            ctx.tune = (*tune, time.perf_counter() - t0)
            if not tune[2]:
                _LAYOUT.record(tune[0], tune[1], ctx.tune[3])
        return _in_dtype(out, xa.dtype)  # (bfloat16: the bias went into the float32 product)

    @staticmethod
    def backward(ctx, grad):
        t0 = time.perf_counter()
        weight, x, cols = ctx.saved_tensors
        stride, pads, dilation, g, nb = ctx.geom
        gx = gw = gb = None
        if state.grad_enabled:  # create_graph: gradients as recorded, differentiable nodes
            if _needs(ctx, 0):
                gx = ConvInputGrad.apply(grad, weight, None, x.shape[2:], stride, pads,
                                         dilation, g)
            if _needs(ctx, 1):
                gw = ConvWeightGrad.apply(x, grad, weight.shape[2:], stride, pads, dilation, g)
            for gradient in (gx, gw):
                if gradient is not None and gradient.grad_fn is not None:
                    gradient.grad_fn.torch_name = "ConvolutionBackwardBackward0"
            if _needs(ctx, 2):
                gb = grad.sum((0, 2, 3))
            return gx, gw, gb, None, None, None, None
        ga, wa = grad._data, weight._data
        oh, ow = ga.shape[2:]
        if type(ga) is np.ndarray:  # (per block and group: the input's and weight's products)
            products = int(_needs(ctx, 0)) + int(_needs(ctx, 1))
            gemm_threads(wa.shape[0] // g, wa[0].size, nb * oh * ow,
                         ga.shape[0] // nb * g * products)
        gm = _grad_columns(ga, g, nb)
        if _needs(ctx, 1) and cols is None:  # pointwise: the input is the columns
            cols = x._data.reshape(x.shape[0], g, x.shape[1] // g, oh * ow)
        if ctx.bias_row and not _needs(ctx, 2):
            cols = cols[:, :, :-1]  # (the row of ones gives the bias's gradient: not needed)
        if _needs(ctx, 0) and _needs(ctx, 1) and \
                _by_image_chunks(gm, x.shape[0], nb, gm.size * wa[0].size):
            gx, gw, gb = _conv_grads_by_chunks(gm, wa, cols, x.shape, stride, pads, dilation,
                                               g, oh, ow)
        else:
            if _needs(ctx, 0):
                gx = _conv_input_grad(gm, wa, x.shape, stride, pads, dilation, g, oh, ow, nb)
            if _needs(ctx, 1):
                gw, gb = _conv_weight_grad(cols, gm, wa.shape, g)
        if _needs(ctx, 2) and gb is None:
            gb = _channel_sums(ga)
        gx, gw, gb = (None if a is None else _wrap(a) for a in (gx, gw, gb))
        tune = getattr(ctx, "tune", None)
        if tune is not None:
            _LAYOUT.record(tune[0], tune[1], tune[3] + time.perf_counter() - t0)
        return gx, gw, gb, None, None, None, None


def _conv_by_image_chunks(xa, wmat, kh: int, kw: int, stride, pads, dilation, g: int,
                          oh: int, ow: int, ones_row: bool):
    """A convolution's (N, G, K, P) columns and (N, G, Og, P) output, one image per block: each
    chunk of images copied to its columns and multiplied while they are in cache, the chunks
    shared between the pool's threads (the same products as ``_im2col`` then one matmul)."""
    n = xa.shape[0]
    cols = np.empty((n, g, wmat.shape[2], oh * ow), dtype=xa.dtype)
    out = np.empty((n, g, wmat.shape[1], oh * ow), dtype=xa.dtype)

    def chunk(lo: int, hi: int) -> None:
        _fill_columns(cols[lo:hi], xa[lo:hi], kh, kw, stride, pads, dilation, g, oh, ow, 1,
                      ones_row, split=False)
        np.matmul(wmat, cols[lo:hi], out=out[lo:hi])

    _over_image_chunks((xa.shape, wmat.shape, xa.dtype.str, stride, pads, dilation), chunk,
                       n, cols.size * wmat.shape[1], cols[0].size * cols.itemsize)
    return cols, out


# The batch layout of a convolution's GEMMs: "blocks" of ``_images_per_block`` images (a few
# GEMMs of at least _GEMM_COLUMNS columns each; the output needs no reorder when a block is one
# image), or the whole "batch" in one GEMM per group (BLAS splits one wide GEMM between its
# threads; the output is reordered once). The two sum a weight gradient over the images in
# another order, so they differ in the last bits: a rule of shapes picks one (see ``_layout``),
# timing only under the ``backends.cpu.benchmark`` opt-in.
_LAYOUT = choice("conv2d_layout", ("blocks", "batch"))


def _layout(x, weight, bias, stride, pads, dilation, g: int, p: int):
    """(images per block, timing record or None) for this convolution.

    The rule: blocks of one image each (``p >= _GEMM_COLUMNS``, or on the CPU the chunks of
    ``_images_per_block``) need no output reorder, so they stay blocks; when a block must hold
    several images, its output is reordered anyway and one GEMM over the batch is the wider,
    better-threaded product ("batch"). Timing, before the chunks of images, chose "blocks" for
    the CNN benchmark's 28x28 images and "batch" for its 14x14 ones, which the chunks now run
    as blocks (4.2 vs 4.9 ms forward and backward); ``benchmarks/models.py --cpu-benchmark``
    compares the rule with timing.
    """
    xa = x._data
    n = xa.shape[0]
    nb = _images_per_block(n, p, xp_of(xa), n * weight._data.size * p)
    if nb == n or xp_of(xa) is not np:  # one layout only (or a GPU: no host timing)
        return nb, None
    key = (xa.shape, weight._data.shape, stride, pads, dilation, g, xa.dtype.str,
           get_num_threads())
    variant = _LAYOUT.pick(key, "batch" if nb > 1 else "blocks")
    if variant == "batch":
        nb = n
    if not _LAYOUT.measuring(key):
        return nb, None
    backward_comes = state.grad_enabled and any(
        t is not None and t.requires_grad for t in (x, weight, bias))
    return nb, (key, variant, backward_comes)


class ConvInputGrad(Function):
    """The input gradient of a convolution as an op of its own: ``(g, weight) -> dx``.

    ``F.conv_transpose2d`` is this op, with a bias (a transposed convolution is the input
    gradient of a convolution). Its backward: d/dg is the convolution of the incoming gradient
    with the weight, d/dweight the weight gradient of that convolution.
    """

    torch_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, g, weight, bias, x_hw, stride, pads, dilation, groups):
        ga, wa = g._data, weight._data
        if ga.dtype != wa.dtype:
            raise RuntimeError(f"Input type ({g.dtype}) and weight type ({weight.dtype}) should "
                               f"be the same")
        n, _, oh, ow = ga.shape
        x_shape = (n, wa.shape[1] * groups, *x_hw)
        nb = _images_per_block(n, oh * ow, xp_of(ga), ga.size * wa[0].size)
        ctx.save_for_backward(g, weight)
        ctx.geom = stride, pads, dilation, groups
        out = _conv_input_grad(_grad_columns(ga, groups, nb), wa, x_shape, stride, pads,
                               dilation, groups, oh, ow, nb)
        if bias is not None:
            out += bias._data.reshape(1, -1, 1, 1)
        return out

    @staticmethod
    def backward(ctx, grad):
        g, weight = ctx.saved_tensors
        stride, pads, dilation, groups = ctx.geom
        dg = dw = db = None
        if _needs(ctx, 0):
            dg = _cropped(Conv2d.apply(grad, weight, None, stride, pads, dilation, groups), g)
        if _needs(ctx, 1):
            dw = ConvWeightGrad.apply(grad, g, weight.shape[2:], stride, pads, dilation, groups)
        if _needs(ctx, 2):
            db = grad.sum((0, 2, 3))
        return dg, dw, db, None, None, None, None, None


class ConvWeightGrad(Function):
    """The weight gradient of a convolution as an op of its own: ``(x, g) -> dweight``.

    Its backward: d/dx is the input gradient (``ConvInputGrad``) of the incoming weight
    gradient, d/dg the convolution of x with it.
    """

    torch_name = "ConvolutionBackwardBackward0"

    @staticmethod
    def forward(ctx, x, g, k_hw, stride, pads, dilation, groups):
        xa, ga = x._data, g._data
        n, c = xa.shape[:2]
        oh, ow = ga.shape[2:]
        nb = _images_per_block(n, oh * ow, xp_of(xa),
                               ga.size * (c // groups) * k_hw[0] * k_hw[1])
        cols = _im2col(xa, *k_hw, stride, pads, dilation, groups, oh, ow, nb)
        ctx.save_for_backward(x, g)
        ctx.geom = stride, pads, dilation, groups
        return _conv_weight_grad(cols, _grad_columns(ga, groups, nb),
                                 (ga.shape[1], c // groups, *k_hw), groups)[0]

    @staticmethod
    def backward(ctx, grad):
        x, g = ctx.saved_tensors
        stride, pads, dilation, groups = ctx.geom
        dx = dg = None
        if _needs(ctx, 0):
            dx = ConvInputGrad.apply(g, grad, None, x.shape[2:], stride, pads, dilation, groups)
        if _needs(ctx, 1):
            dg = _cropped(Conv2d.apply(x, grad, None, stride, pads, dilation, groups), g)
        return dx, dg, None, None, None, None, None


def _cropped(conv, like):
    """``conv`` cut to ``like``'s height and width. A transposed convolution's output_padding
    (which may reach the stride when the dilation is larger) adds rows and columns that no
    input element reaches; the convolution of its output then has extra windows at the end,
    which are not gradients of anything (PyTorch's convolution_backward drops them too)."""
    oh, ow = like.shape[2:]
    return conv if tuple(conv.shape[2:]) == (oh, ow) else conv[:, :, :oh, :ow]
