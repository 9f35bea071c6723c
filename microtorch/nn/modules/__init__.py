"""The layer classes of ``microtorch.nn``."""

from .activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv2d
from .dropout import Dropout
from .flatten import Flatten, Unflatten
from .linear import Identity, Linear
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from .pooling import AvgPool2d, MaxPool2d
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .sparse import Embedding

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "Linear", "Identity", "Conv2d",
           "MaxPool2d", "AvgPool2d", "Flatten", "Unflatten", "Dropout", "Embedding",
           "LayerNorm", "BatchNorm1d", "BatchNorm2d", "ReLU", "LeakyReLU", "GELU", "SiLU",
           "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "MSELoss", "L1Loss", "CrossEntropyLoss",
           "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "RNNBase", "RNN", "LSTM", "GRU",
           "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
