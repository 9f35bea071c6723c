"""Re-laying convolution weights in memory (PyTorch's ``torch.nn.utils.memory_format``).

Only the weights of the 2-D (or 3-D) convolutions change layout, not every 4-D (5-D) tensor of
the model as ``Module.to(memory_format=...)`` would: PyTorch's reason is cuDNN's fast NHWC
kernels. microtorch's convolutions give the same values whatever the weight's layout (see
``microtorch._memory_format``), so here the conversion changes ``stride()`` and
``is_contiguous(memory_format=...)``, which code written for PyTorch may check.
"""

from __future__ import annotations

from typing import TypeVar

from ..._memory_format import memory_format as MemoryFormat
from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]

M = TypeVar("M", bound=Module)


def _convert(module: Module, kinds: tuple[type, ...], memory_format: MemoryFormat) -> None:
    """Re-lay the weight of every module of ``kinds`` in ``module``'s tree, in place: the
    parameter objects stay, only their data is replaced."""
    for sub in module.modules():
        if isinstance(sub, kinds):
            # clone lays the copy out; resize_ to the same size with the format makes the
            # strides exact also where clone's preserve rules could keep the old ones.
            laid = sub.weight.detach().clone(memory_format=memory_format)
            sub.weight.data = laid.resize_(laid.size(), memory_format=memory_format)


def convert_conv2d_weight_memory_format(module: M, memory_format: MemoryFormat) -> M:
    """Lay out the weight of ``module`` and of every ``Conv2d`` / ``ConvTranspose2d`` in it
    in ``memory_format`` (``microtorch.channels_last``, ``contiguous_format``); ``module``,
    changed in place, is returned."""
    _convert(module, (Conv2d, ConvTranspose2d), memory_format)
    return module


def convert_conv3d_weight_memory_format(module: M, memory_format: MemoryFormat) -> M:
    """Lay out the weight of ``module`` and of every ``Conv3d`` / ``ConvTranspose3d`` in it
    in ``memory_format`` (``microtorch.channels_last_3d``, ``contiguous_format``);
    ``module``, changed in place, is returned."""
    _convert(module, (Conv3d, ConvTranspose3d), memory_format)
    return module
