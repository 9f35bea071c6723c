"""``grad_fn`` names as PyTorch prints them (``tensor(..., grad_fn=<AddmmBackward0>)``).

A microtorch node may fuse what PyTorch records as several (``linear``, ``cross_entropy``) or
split what it records as one; where the output's node stands for the same op, it carries
PyTorch's name, so printed tensors read the same.
"""

from __future__ import annotations

import pytest

import microtorch as mt

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _cases(lib):
    """name -> a function of (lib, x) whose result's grad_fn is compared."""
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)
    conv, deconv = nn.Conv2d(3, 4, 3), nn.ConvTranspose2d(3, 4, 3, stride=2)
    fc, fc_nobias = nn.Linear(5, 2), nn.Linear(5, 2, bias=False)
    return {
        "conv2d": lambda x: conv(x),
        "conv_transpose2d": lambda x: deconv(x),
        "linear 1-d": lambda x: fc(x[0, 0, 0]),
        "linear 1-d no bias": lambda x: fc_nobias(x[0, 0, 0]),
        "linear 2-d": lambda x: fc(x[0, 0]),
        "linear 2-d no bias": lambda x: fc_nobias(x[0, 0]),
        "linear 4-d": lambda x: fc(x),
        "linear 4-d no bias": lambda x: fc_nobias(x),
        "max_pool2d": lambda x: F.max_pool2d(x, 2),
        "avg_pool2d": lambda x: F.avg_pool2d(x, 2),
        "cross_entropy": lambda x: F.cross_entropy(x[:, :, 0, 0], lib.tensor([0, 1])),
        "pad": lambda x: F.pad(x, (1, 1)),
        "conv2d input gradient": lambda x: lib.autograd.grad(conv(x).sum(), [x],
                                                             create_graph=True)[0],
    }


@pytest.mark.parametrize("case", sorted(_cases(mt)))
def test_grad_fn_name_matches_torch(case):
    names = []
    for lib in (torch, mt):
        x = lib.ones(2, 3, 5, 5, requires_grad=True)
        names.append(_cases(lib)[case](x).grad_fn.name())
    assert names[1] == names[0]
