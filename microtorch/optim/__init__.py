"""``microtorch.optim``: optimizers, learning-rate schedulers and gradient storage strategies."""

from .. import _module_aliases
from . import adam, adam_family, adaptive, averaged, lr_scheduler, quasi_newton
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adam_family import Adamax, NAdam, RAdam
from .adaptive import Adadelta, Rprop
from .averaged import ASGD
from .muon import Muon
from .optimizer import Optimizer, StaleGradWarning
from .quasi_newton import LBFGS
from .rmsprop import RMSprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Optimizer", "StaleGradWarning", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad",
           "Adadelta", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD", "SparseAdam", "LBFGS",
           "Muon", "lr_scheduler"]

# PyTorch's one module per optimizer, for the ones that share a module here
_module_aliases.alias_modules(__name__, {
    "adamw": adam, "adamax": adam_family, "nadam": adam_family, "radam": adam_family,
    "adadelta": adaptive, "rprop": adaptive, "asgd": averaged,
    "lbfgs": quasi_newton})

from . import swa_utils  # noqa: E402
from .adafactor import Adafactor  # noqa: E402

__all__ += ["Adafactor", "swa_utils"]
