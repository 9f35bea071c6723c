"""Strided window views shared by convolution and pooling: one view per kernel
offset (or one ``as_strided`` window view), and the strided slice-add (``col2im``) that takes
gradients back, on NumPy and CuPy alike.
"""

from __future__ import annotations

from ._util import xp_of


def _windows(arr, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, oh: int, ow: int):
    """A (N, C, OH, OW, KH, KW) strided view of every window of a padded (N, C, H, W) array."""
    xp = xp_of(arr)
    n, c = arr.shape[:2]
    s0, s1, s2, s3 = arr.strides
    return xp.lib.stride_tricks.as_strided(
        arr, (n, c, oh, ow, kh, kw), (s0, s1, s2 * sh, s3 * sw, s2 * dh, s3 * dw))


def _col2im(target, cols, sh: int, sw: int, dh: int, dw: int) -> None:
    """target[..., window positions] += cols, for cols shaped (KH, KW, *lead, OH, OW).

    One strided slice-add per kernel offset: windows overlap, so a fancy-index scatter would
    need an unbuffered add; these slices never repeat a position within one offset. Callers
    lay cols out so that each ``cols[i, j]`` is a contiguous block, or close to one.
    """
    kh, kw = cols.shape[:2]
    oh, ow = cols.shape[-2:]
    for i in range(kh):
        for j in range(kw):
            h0, w0 = i * dh, j * dw
            target[..., h0:h0 + sh * (oh - 1) + 1:sh, w0:w0 + sw * (ow - 1) + 1:sw] += cols[i, j]


def _window_slices(arr, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, oh: int,
                   ow: int):
    """(k, view) for each kernel offset k = i * kw + j: the (N, C, OH, OW) elements at it."""
    for i in range(kh):
        for j in range(kw):
            h0, w0 = i * dh, j * dw
            yield i * kw + j, arr[:, :, h0:h0 + sh * (oh - 1) + 1:sh, w0:w0 + sw * (ow - 1) + 1:sw]


def _pad_hw(arr, pads, value=0.0):
    """Pad the last two axes by (top, bottom, left, right): one fill, one copy."""
    top, bottom, left, right = pads
    if not any(pads):
        return arr
    xp = xp_of(arr)
    n, c, h, w = arr.shape
    shape = (n, c, h + top + bottom, w + left + right)
    out = xp.zeros(shape, arr.dtype) if value == 0 else xp.full(shape, value, arr.dtype)
    out[:, :, top:top + h, left:left + w] = arr
    return out


def _crop_hw(arr, pads, h: int, w: int):
    top, _, left, _ = pads
    return arr[..., top:top + h, left:left + w]
