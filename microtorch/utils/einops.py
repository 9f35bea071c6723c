"""einops on microtorch tensors: the backend einops looks for, and ``einops.layers.torch``'s
layers as microtorch modules.

einops finds a tensor's backend among the subclasses of its ``AbstractBackend`` whose framework
module is imported. ``MicrotorchBackend`` (``_einops_backend``) is PyTorch's backend with
``microtorch`` as the framework (microtorch has every op that backend calls). It is defined as
soon as einops is imported (``microtorch.utils._einops_hook``), so ``einops.rearrange(t,
...)``, ``reduce``, ``repeat``, ``einsum``, ``pack`` work on microtorch tensors with no import of
this module; einops is never imported by microtorch itself. ``Rearrange``, ``Reduce`` and
``EinMix`` are the layers (``einops.layers.torch`` subclasses the real ``torch.nn.Module``, so
it cannot serve here).
"""

from __future__ import annotations

from typing import Any

from einops.layers import RearrangeMixin, ReduceMixin
from einops.layers._einmix import _EinmixMixin

import microtorch

from ..nn import Module, Parameter
from ._einops_backend import MicrotorchBackend

__all__ = ["MicrotorchBackend", "Rearrange", "Reduce", "EinMix"]


class Rearrange(RearrangeMixin, Module):
    """``einops.rearrange`` as a layer."""

    def forward(self, input):
        return self._apply_recipe(input)


class Reduce(ReduceMixin, Module):
    """``einops.reduce`` as a layer."""

    def forward(self, input):
        return self._apply_recipe(input)


class EinMix(_EinmixMixin, Module):
    """einops' EinMix layer: an einsum with a weight (and bias) whose shape the pattern names,
    initialised as ``einops.layers.torch.EinMix`` (uniform within the same bounds)."""

    def _create_parameters(self, weight_shape, weight_bound, bias_shape, bias_bound) -> None:
        self.weight = Parameter(microtorch.zeros(weight_shape).uniform_(-weight_bound,
                                                                         weight_bound))
        self.bias = None if bias_shape is None else Parameter(
            microtorch.zeros(bias_shape).uniform_(-bias_bound, bias_bound))

    def _create_rearrange_layers(self, pre_reshape_pattern: str | None,
                                 pre_reshape_lengths: dict[str, Any] | None,
                                 post_reshape_pattern: str | None,
                                 post_reshape_lengths: dict[str, Any] | None) -> None:
        self.pre_rearrange = None if pre_reshape_pattern is None else Rearrange(
            pre_reshape_pattern, **(pre_reshape_lengths or {}))
        self.post_rearrange = None if post_reshape_pattern is None else Rearrange(
            post_reshape_pattern, **(post_reshape_lengths or {}))

    def forward(self, input):
        if self.pre_rearrange is not None:
            input = self.pre_rearrange(input)
        result = microtorch.einsum(self.einsum_pattern, input, self.weight)
        if self.bias is not None:
            result += self.bias
        if self.post_rearrange is not None:
            result = self.post_rearrange(result)
        return result
