"""``microtorch.nn.utils``: gradient clipping, flat parameter vectors, ``rnn`` (packing
and padding of variable-length sequences), ``parametrize`` and ``parametrizations``
(weight_norm, spectral_norm), ``prune``, ``fusion`` (BatchNorm folded into Conv/Linear),
``skip_init``, the convolution weights' memory format, ``stateless`` (loaded on first use)."""

from . import fusion, init, memory_format, parametrizations, parametrize, prune, rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .init import skip_init
from .memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters", "rnn", "parametrize", "parametrizations", "weight_norm",
           "remove_weight_norm", "spectral_norm", "remove_spectral_norm", "prune",
           "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "skip_init", "convert_conv2d_weight_memory_format",
           "convert_conv3d_weight_memory_format", "stateless"]


def __getattr__(name: str):
    # stateless calls microtorch.func, which builds on nn: imported on first use (as
    # nn.parallel is), else nn.utils and func would import each other.
    if name == "stateless":
        import importlib

        return importlib.import_module(".stateless", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
