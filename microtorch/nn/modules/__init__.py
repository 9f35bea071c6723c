"""The layer classes of ``microtorch.nn``, one module per category as in PyTorch's
``torch/nn/modules``: activation, adaptive, container, conv, distance, dropout, flatten, fold,
linear, loss, normalization, padding, pixelshuffle, pooling, rnn, sparse, transformer,
upsampling; and ``DataParallel`` (``data_parallel``: ``nn.parallel`` itself loads on first use)."""

from ... import _module_aliases
from . import (
    activation,
    adaptive,
    container,
    conv,
    data_parallel,
    distance,
    dropout,
    flatten,
    fold,
    lazy,
    linear,
    loss,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
)
from .activation import *  # noqa: F403
from .adaptive import *  # noqa: F403
from .container import *  # noqa: F403
from .conv import *  # noqa: F403
from .data_parallel import *  # noqa: F403
from .distance import *  # noqa: F403
from .dropout import *  # noqa: F403
from .flatten import *  # noqa: F403
from .fold import *  # noqa: F403
from .lazy import *  # noqa: F403
from .linear import *  # noqa: F403
from .loss import *  # noqa: F403
from .module import Module
from .normalization import *  # noqa: F403
from .padding import *  # noqa: F403
from .pixelshuffle import *  # noqa: F403
from .pooling import *  # noqa: F403
from .rnn import *  # noqa: F403
from .sparse import *  # noqa: F403
from .transformer import *  # noqa: F403
from .upsampling import *  # noqa: F403

__all__ = ["Module"] + [
    name
    for category in (activation, adaptive, container, conv, data_parallel, distance, dropout,
                     flatten, fold, lazy, linear, loss, normalization, padding, pixelshuffle,
                     pooling, rnn, sparse, transformer, upsampling)
    for name in category.__all__]

# PyTorch's module paths of classes kept with their category here (torch.nn.modules.batchnorm)
_module_aliases.alias_modules(__name__, {"batchnorm": normalization,
                                         "instancenorm": normalization,
                                         "channelshuffle": pixelshuffle,
                                         "linear_cross_entropy_options": loss})
