"""A model file for ``microtorch bench --model``: a small CNN on 28x28 images.

    microtorch bench --model benchmarks/study_cnn.py --quick --out benchmarks/results/study_cnn

``model()`` builds the network, ``batch()`` returns one micro-batch (inputs, targets);
``optimizer(params)`` is optional (SGD with lr 0.01 when absent), as is ``loss``.
"""

import microtorch as torch
from microtorch import nn


def model() -> nn.Module:
    """Two 3x3 convolutions with ReLU and 2x2 max-pooling, then a linear classifier."""
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


def batch():
    """64 random images and labels (the study draws them from a seeded stream)."""
    return torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))


def optimizer(params):
    """SGD with momentum, as the CNN examples train."""
    return torch.optim.SGD(params, lr=0.01, momentum=0.9)
