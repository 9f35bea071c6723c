"""The layer classes of ``microtorch.nn``."""

from . import activation_extra, layers_1d, loss_extra, normalization_extra, resampling, transformer
from .activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .activation_extra import *  # noqa: F403
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d, ConvTranspose2d
from .dropout import Dropout
from .flatten import Flatten, Unflatten
from .layers_1d import AvgPool1d, MaxPool1d
from .linear import Identity, Linear
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .loss_extra import *  # noqa: F403
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from .normalization_extra import *  # noqa: F403
from .pooling import AvgPool2d, MaxPool2d
from .resampling import *  # noqa: F403
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .sparse import Embedding
from .transformer import *  # noqa: F403

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "Linear", "Identity", "Conv1d",
           "Conv2d", "ConvTranspose2d", "MaxPool2d", "AvgPool2d", "Flatten", "Unflatten", "Dropout",
           "Embedding", "LayerNorm", "BatchNorm1d", "BatchNorm2d", "ReLU", "LeakyReLU", "GELU",
           "SiLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "MSELoss", "L1Loss",
           "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "RNNBase", "RNN", "LSTM",
           "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
__all__ += [*activation_extra.__all__, *loss_extra.__all__, *normalization_extra.__all__,
            *resampling.__all__, *transformer.__all__, *layers_1d.__all__]
