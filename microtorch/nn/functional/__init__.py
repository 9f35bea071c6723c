"""``microtorch.nn.functional``: stateless layers, activations and losses (``import ... as F``).

One module per category, as PyTorch groups them: ``activation``, ``loss`` (with
``margin_loss`` and ``ctc``), ``conv``,
``pooling``, ``normalization``, ``dropout``, ``fold`` (unfold/fold), ``sparse`` (embedding,
embedding_bag, one_hot), ``attention``,
``vision`` (pad, interpolate, pixel shuffle), ``distance`` and ``linear``. The graph nodes the
hot ones use live in ``microtorch.ops`` under the same category names (``ops.conv``,
``ops.pooling``, ...); this package holds the PyTorch-signature entry points.
"""

# Aliased: ``dropout`` and ``linear`` are also the names of functions exported below.
from ...ops import tensor_args as _tensor_args
from . import activation as _activation
from . import attention as _attention
from . import conv as _conv
from . import ctc as _ctc
from . import distance as _distance
from . import dropout as _dropout
from . import fold as _fold
from . import fractional_pooling as _fractional_pooling
from . import linear as _linear
from . import linear_cross_entropy as _linear_cross_entropy
from . import loss as _loss
from . import margin_loss as _margin_loss
from . import normalization as _normalization
from . import pooling as _pooling
from . import sparse as _sparse
from . import vision as _vision
from .activation import *  # noqa: F403
from .attention import *  # noqa: F403
from .conv import *  # noqa: F403
from .ctc import *  # noqa: F403
from .distance import *  # noqa: F403
from .dropout import *  # noqa: F403
from .fold import *  # noqa: F403
from .fractional_pooling import *  # noqa: F403
from .linear import *  # noqa: F403
from .linear_cross_entropy import *  # noqa: F403
from .loss import *  # noqa: F403
from .margin_loss import *  # noqa: F403
from .normalization import *  # noqa: F403
from .pooling import *  # noqa: F403
from .sparse import *  # noqa: F403
from .vision import *  # noqa: F403

__all__ = [name for module in (_activation, _attention, _conv, _ctc, _distance, _dropout, _fold,
                               _fractional_pooling,
                               _linear, _linear_cross_entropy, _loss, _margin_loss,
                               _normalization, _pooling, _sparse, _vision)
           for name in module.__all__]

_tensor_args.install(globals(), "functional")  # F.gelu(2): PyTorch's TypeError

# Additions: power-average pooling, always-with-indices max pools, leaky_relu_, conv_tbc, ...
from . import lp_pooling as _lp_pooling  # noqa: E402
from . import native_ops as _native_ops  # noqa: E402
from .lp_pooling import *  # noqa: E402, F403
from .native_ops import *  # noqa: E402, F403

__all__ += [*_native_ops.__all__, *_lp_pooling.__all__]
_tensor_args.install(globals(), "functional")  # (idempotent for the names above)
