"""``unfold`` (im2col: every sliding block of a batched image as a column) and ``fold``
(col2im: the sum of overlapping blocks back into an image).

``unfold`` is one gather of the padded input (``Index``) and ``fold`` the matching scatter-add
(``IndexScatter``); each is the other's backward, so both have gradients of any order.
"""

from __future__ import annotations

from ...autograd.function import named
from ...ops._util import Tensor
from ...ops.indexing import IndexScatter
from ...ops.vision import Pad
from ._util import _pair
from ._window_index import window_key

__all__ = ["unfold", "fold"]


def _geometry(kernel_size, dilation, padding, stride):
    k, d, p, s = (_pair(v, name, single=False)
                  for v, name in ((kernel_size, "kernel_size"), (dilation, "dilation"),
                                  (padding, "padding"), (stride, "stride")))
    for what, v in (("kernel", k), ("stride", s), ("dilation", d)):
        if min(v) <= 0:
            raise RuntimeError(f"{what} should be greater than zero, but got {what}_height: "
                               f"{v[0]} {what}_width: {v[1]}")
    if min(p) < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {p[0]} "
                           f"pad_width: {p[1]}")
    return k, d, p, s


def _blocks(size, k, d, p, s, what: str) -> tuple[int, int]:
    blocks = tuple((size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2))
    if min(blocks) < 1:
        raise RuntimeError(f"Given {what} spatial size ({size[0]}, {size[1]}), kernel_size="
                           f"{k}, dilation={d}, padding={p}, calculated shape of the array of "
                           f"sliding blocks as {blocks}, but its components must be at least "
                           f"one.")
    return blocks


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Extract sliding blocks: (N, C, H, W) -> (N, C * KH * KW, L), L the number of blocks;
    rows run over (channel, kernel row, kernel column), columns over block positions."""
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    k, d, p, s = _geometry(kernel_size, dilation, padding, stride)
    x = input if input.ndim == 4 else input.unsqueeze(0)
    n, c = x.shape[:2]
    out = _blocks(x.shape[2:], k, d, p, s, "input with")
    if any(p):
        x = Pad.apply(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])), 0.0)
    cols = x[window_key(x, out, k, s, d, kernel_first=True)]  # (N, C, KH, KW, OH, OW)
    cols = cols.reshape(n, c * k[0] * k[1], out[0] * out[1])
    named(cols, "Im2ColBackward0")
    return cols if input.ndim == 4 else cols.squeeze(0)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sum sliding blocks into an image: (N, C * KH * KW, L) -> (N, C, H, W) with (H, W) =
    ``output_size``; overlapping entries add up (the adjoint of :func:`unfold`)."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    k, d, p, s = _geometry(kernel_size, dilation, padding, stride)
    size = _pair(output_size, "output_size", single=False)
    cols = input if input.ndim == 3 else input.unsqueeze(0)
    n, ck, length = cols.shape
    if ck % (k[0] * k[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={ck} and kernel_size={k}.")
    blocks = _blocks(size, k, d, p, s, "output_size=" + str(size) + ",")
    if blocks[0] * blocks[1] != length:
        raise RuntimeError(f"Given output_size={size}, kernel_size={k}, dilation={d}, padding="
                           f"{p}, stride={s}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {blocks[0]} * {blocks[1]} = "
                           f"{blocks[0] * blocks[1]}, but got input.size(2)={length}.")
    c = ck // (k[0] * k[1])
    padded = (n, c, size[0] + 2 * p[0], size[1] + 2 * p[1])
    blocks_view = cols.reshape(n, c, k[0], k[1], *blocks)
    image = IndexScatter.apply(blocks_view, window_key(cols, blocks, k, s, d, kernel_first=True),
                               padded)
    image = image[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]
    named(image, "Col2ImBackward0")
    return image if input.ndim == 3 else image.squeeze(0)
