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
    lstm, lstm_bf = nn.LSTM(5, 3), nn.LSTM(5, 3, batch_first=True)
    gru, gru_bf = nn.GRU(5, 3), nn.GRU(5, 3, batch_first=True)
    t = lib.tensor
    mask = lib.ones(5, 5, dtype=lib.bool)
    half = lib.ones(2, 3, 5, 5) / 2
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
        # views and shapes
        "view": lambda x: x.view(6, 25),
        "reshape": lambda x: x.reshape(6, -1),
        "reshape of a copy": lambda x: x.transpose(0, 3).reshape(-1),
        "flatten": lambda x: x.flatten(1),
        "flatten one dim": lambda x: x.flatten(1, 1),
        "unsqueeze": lambda x: x.unsqueeze(0),
        "squeeze": lambda x: x[:1].squeeze(),
        "squeeze dim": lambda x: x[:1].squeeze(0),
        "squeeze dims": lambda x: x[:1].squeeze((0, 1)),
        "squeeze nothing": lambda x: x.squeeze(1),
        "t": lambda x: x[0, 0].t(),
        "transpose": lambda x: x.transpose(1, 2),
        "mT": lambda x: x.mT,
        "T": lambda x: x[0, 0].T,
        "permute": lambda x: x.permute(3, 2, 1, 0),
        "expand": lambda x: x[:, :1].expand(2, 4, 5, 5),
        "expand to its shape": lambda x: x.expand(2, 3, 5, 5),
        "repeat": lambda x: x.repeat(1, 2, 1, 1),
        "stack": lambda x: lib.stack([x, x], 1),
        "cat": lambda x: lib.cat([x, x], 1),
        # indexing: PyTorch's node is the last op of the chain
        "select": lambda x: x[0],
        "slice": lambda x: x[:, 1:],
        "select then slice": lambda x: x[0, 1:],
        "slice then select": lambda x: x[1:, 0],
        "full slice then select": lambda x: x[:, -1],
        "unsqueeze by None": lambda x: x[None],
        "select then None": lambda x: x[0, None],
        "full slice alone": lambda x: x[:],
        "full slices": lambda x: x[:, :],
        "ellipsis": lambda x: x[...],
        "ellipsis then select": lambda x: x[..., 0],
        "index tensor": lambda x: x[t([0, 1, 1])],
        "narrow": lambda x: x.narrow(0, 0, 2),
        "split": lambda x: x.split(1)[1],
        "split sizes": lambda x: x.split([1, 2], 1)[1],
        "chunk": lambda x: x.chunk(2, 2)[0],
        "unbind": lambda x: x.unbind(1)[2],
        "index_select": lambda x: x.index_select(1, t([0, 2])),
        "masked_fill": lambda x: x.masked_fill(mask, 0.0),
        "masked_fill tensor": lambda x: x.masked_fill(mask, t(0.0)),
        # products
        "mm": lambda x: x[0, 0] @ x[0, 1],
        "dot": lambda x: x[0, 0, 0] @ x[0, 0, 1],
        "mv": lambda x: x[0, 0] @ x[0, 0, 1],
        "vector @ matrix": lambda x: x[0, 0, 0] @ x[0, 1],
        "batched matmul": lambda x: x @ x,
        "matrix @ batch": lambda x: x[0, 0] @ x,
        "constant matrix @ batch": lambda x: lib.ones(5, 5) @ x,
        "bmm": lambda x: lib.bmm(x[0], x[1]),
        "torch.mm": lambda x: lib.mm(x[0, 0], x[0, 1]),
        # reductions
        "sum": lambda x: x.sum(),
        "sum dim": lambda x: x.sum(1),
        "mean dim": lambda x: x.mean((2, 3), keepdim=True),
        "prod dim": lambda x: x.prod(1),
        "max": lambda x: x.max(),
        "max dim": lambda x: x.max(1)[0],
        "min dim": lambda x: x.min(1, keepdim=True).values,
        "amax": lambda x: x.amax(1),
        "amin": lambda x: x.amin(),
        "std": lambda x: x.std(1),
        "logsumexp": lambda x: x.logsumexp(1),
        "inf norm": lambda x: x.norm(float("inf")),
        # elementwise overloads
        "clamp": lambda x: x.clamp(0, 1),
        "clamp min only": lambda x: x.clamp(min=0),
        "clamp tensors": lambda x: x.clamp(half, 2 * half),
        "clamp_min": lambda x: x.clamp_min(0),
        "clamp_min tensor": lambda x: x.clamp_min(half),
        "clamp_max": lambda x: x.clamp_max(1),
        "pow": lambda x: x ** 2,
        "pow tensor": lambda x: x ** x,
        "number ** tensor": lambda x: 2 ** x,
        "square": lambda x: x.square(),
        "log1p": lambda x: x.log1p(),
        "number - tensor": lambda x: 1 - x,
        # activations
        "gelu": lambda x: F.gelu(x),
        "gelu tanh": lambda x: F.gelu(x, approximate="tanh"),
        "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
        "leaky_relu in place": lambda x: F.leaky_relu(x * 1, 0.2, inplace=True),
        "leaky_relu in place on a view": lambda x: F.leaky_relu((x * 1)[0], inplace=True),
        "silu": lambda x: F.silu(x),
        "silu in place": lambda x: F.silu(x * 1, inplace=True),
        "celu": lambda x: F.celu(x),
        "celu in place": lambda x: F.celu(x * 1, inplace=True),
        "elu in place": lambda x: F.elu(x * 1, inplace=True),
        "threshold": lambda x: F.threshold(x, 0.5, 0.0),
        "threshold in place": lambda x: F.threshold_(x * 1, 0.5, 0.0),
        "prelu": lambda x: F.prelu(x, lib.full((3,), 0.25)),
        # losses
        "mse_loss": lambda x: F.mse_loss(x, half),
        "mse_loss none": lambda x: F.mse_loss(x, half, reduction="none"),
        "nll_loss": lambda x: F.nll_loss(x[:, :, 0, 0], t([0, 1])),
        "nll_loss none": lambda x: F.nll_loss(x[:, :, 0, 0], t([0, 1]), reduction="none"),
        "nll_loss 4-d": lambda x: F.nll_loss(x, lib.zeros(2, 5, 5, dtype=lib.long)),
        "nll_loss 3-d none": lambda x: F.nll_loss(x[:, :, 0], lib.zeros(2, 5, dtype=lib.long),
                                                  reduction="none"),
        "cross_entropy 4-d": lambda x: F.cross_entropy(x, lib.zeros(2, 5, 5, dtype=lib.long)),
        "cross_entropy smoothing": lambda x: F.cross_entropy(x[:, :, 0, 0], t([0, 1]),
                                                             label_smoothing=0.1),
        "cross_entropy probs": lambda x: F.cross_entropy(x, half),
        "cross_entropy probs sum": lambda x: F.cross_entropy(x, half, reduction="sum"),
        "binary_cross_entropy": lambda x: F.binary_cross_entropy(x.sigmoid(), half),
        "bce with logits": lambda x: F.binary_cross_entropy_with_logits(x, half),
        "smooth_l1_loss": lambda x: F.smooth_l1_loss(x, half),
        "huber_loss": lambda x: F.huber_loss(x, half, reduction="sum"),
        "soft_margin_loss": lambda x: F.soft_margin_loss(x, half),
        "pairwise_distance": lambda x: F.pairwise_distance(x[0, 0], x[0, 1]),
        # normalisation
        "batch_norm": lambda x: nn.BatchNorm2d(3)(x),
        "batch_norm eval": lambda x: nn.BatchNorm2d(3).eval()(x),
        "layer_norm": lambda x: nn.LayerNorm(5)(x),
        "group_norm": lambda x: nn.GroupNorm(1, 3)(x),
        "instance_norm": lambda x: F.instance_norm(x),
        # resampling and padding
        "interpolate nearest": lambda x: F.interpolate(x, scale_factor=2),
        "interpolate nearest-exact": lambda x: F.interpolate(x, size=7, mode="nearest-exact"),
        "interpolate bilinear": lambda x: F.interpolate(x, size=(7, 3), mode="bilinear"),
        "interpolate linear": lambda x: F.interpolate(x[0], size=7, mode="linear"),
        "adaptive_avg_pool2d": lambda x: F.adaptive_avg_pool2d(x, 2),
        "adaptive_avg_pool2d 1x1": lambda x: F.adaptive_avg_pool2d(x, 1),
        "adaptive_avg_pool1d": lambda x: F.adaptive_avg_pool1d(x[0], 2),
        "adaptive_max_pool2d": lambda x: F.adaptive_max_pool2d(x, 2),
        "pixel_shuffle": lambda x: F.pixel_shuffle(x[:, :1].expand(2, 4, 5, 5), 2),
        "pixel_unshuffle": lambda x: F.pixel_unshuffle(x[..., :4, :4], 2),
        "pad reflect": lambda x: F.pad(x, (1, 1, 1, 1), mode="reflect"),
        "pad replicate 1-d": lambda x: F.pad(x[0], (1, 1), mode="replicate"),
        "pad circular": lambda x: F.pad(x, (1, 1, 2, 2), mode="circular"),
        # recurrent layers (PyTorch's CPU: oneDNN LSTM layer, stacked steps, transposes)
        "lstm": lambda x: lstm(x[0])[0],
        "lstm state": lambda x: lstm(x[0])[1][1],
        "lstm batch_first": lambda x: lstm_bf(x[0])[0],
        "gru": lambda x: gru(x[0])[0],
        "gru batch_first": lambda x: gru_bf(x[0])[0],
        "gru unbatched": lambda x: gru(x[0, 0])[0],
        # sorting, matrix, scatter, arrange and special ops, and the 1-D layers
        "tril": lambda x: x.tril(),
        "triu": lambda x: lib.triu(x, 1),
        "sort": lambda x: x.sort(1).values,
        "sort stable": lambda x: x.sort(dim=1, stable=True).values,
        "topk": lambda x: x.topk(2).values,
        "kthvalue": lambda x: x.kthvalue(2).values,
        "addmm": lambda x: lib.addmm(x[0, 0], x[0, 0], x[0, 0]),
        "baddbmm": lambda x: lib.baddbmm(x[0], x[0], x[0]),
        "diag of a vector": lambda x: lib.diag(x[0, 0, 0]),
        "diag of a matrix": lambda x: lib.diag(x[0, 0]),
        "diagonal": lambda x: x.diagonal(0, 2, 3),
        "trace": lambda x: x[0, 0].trace(),
        "scatter": lambda x: x.scatter(0, lib.zeros(1, 3, 5, 5, dtype=lib.long), x),
        "scatter value": lambda x: x.scatter(0, lib.zeros(1, 3, 5, 5, dtype=lib.long), 1.0),
        "index_add": lambda x: x.index_add(0, lib.tensor([1, 1]), x),
        "masked_select": lambda x: x.masked_select(x > 0),
        "take": lambda x: x.take(lib.tensor([3])),
        "roll": lambda x: x.roll(1, 2),
        "movedim": lambda x: x.movedim(0, -1),
        "hstack": lambda x: lib.hstack([x, x]),
        "vstack": lambda x: lib.vstack([x[0, 0, 0], x[0, 0, 1]]),
        "rot90": lambda x: x.rot90(1, (2, 3)),
        "atan2": lambda x: x.atan2(x * 2),
        "hypot": lambda x: lib.hypot(x, x),
        "lerp": lambda x: x.lerp(x * 2, 0.3),
        "lerp tensor weight": lambda x: lib.lerp(x, x * 2, half),
        "erf": lambda x: lib.erf(x),
        "erfc": lambda x: x.erfc(),
        "erfinv": lambda x: (x / 9).erfinv(),
        "nan_to_num": lambda x: x.nan_to_num(),
        "cumprod": lambda x: x.cumprod(1),
        "clamp_min function": lambda x: lib.clamp_min(x, 0.5),
        "clamp_max function": lambda x: lib.clamp_max(x, 0.5),
        "dist": lambda x: x.dist(x * 2),
        "cdist": lambda x: lib.cdist(x, x * 2),
        "softmin": lambda x: F.softmin(x, 1),
        "glu": lambda x: F.glu(x[..., :4], 3),
        "conv1d": lambda x: F.conv1d(x[0], lib.ones(2, 5, 3)),
        "max_pool1d": lambda x: F.max_pool1d(x[0], 2),
        "avg_pool1d": lambda x: F.avg_pool1d(x[0], 2),
        "copysign": lambda x: x.copysign(-1.0),
        "kron": lambda x: lib.kron(x[0, 0], x[0, 1]),
        "put": lambda x: x.put(lib.tensor([1, 2]), x[0, 0, 0, :2]),
        "logcumsumexp": lambda x: x.logcumsumexp(1),
    }


@pytest.mark.parametrize("case", sorted(_cases(mt)))
def test_grad_fn_name_matches_torch(case):
    names = []
    for lib in (torch, mt):
        x = lib.ones(2, 3, 5, 5, requires_grad=True)
        node = _cases(lib)[case](x).grad_fn
        names.append(None if node is None else node.name())
    assert names[1] == names[0]
