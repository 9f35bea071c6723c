"""``microtorch.optim``: optimizers, learning-rate schedulers and gradient storage strategies."""

from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adam_family import Adamax, NAdam, RAdam, SparseAdam
from .adaptive import Adadelta, Rprop
from .averaged import ASGD
from .muon import Muon
from .optimizer import Optimizer, StaleGradWarning
from .quasi_newton import LBFGS
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "StaleGradWarning", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad",
           "Adadelta", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD", "SparseAdam", "LBFGS",
           "Muon", "lr_scheduler"]
