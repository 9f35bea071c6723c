"""Checkpointing over many ops: the recomputation saves what the forward saved (same count,
shapes and dtypes), each saved tensor is unpacked once per backward, and gradients are
bit-identical to the plain run, for both variants."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch as mt
from microtorch.utils.checkpoint import checkpoint

F = mt.nn.functional
D = mt.float64


def _modules(device):
    mt.manual_seed(0)
    return {"lstm": mt.nn.LSTM(6, 5, num_layers=2, bidirectional=True).double().to(device),
            "gru": mt.nn.GRU(6, 5).double().to(device),
            "mha": mt.nn.MultiheadAttention(6, 2).double().to(device)}


def _cases(dev, mods):
    t = lambda *v: mt.tensor(*v, device=dev)  # noqa: E731
    tgt = t([0, 2, 1, 5])
    half = mt.rand(4, 6, dtype=D, device=dev)
    grid = mt.rand(2, 4, 4, 2, dtype=D, device=dev) * 2 - 1
    k = mt.randn(4, 3, 3, 3, dtype=D, device=dev)
    eye = mt.eye(4, dtype=D, device=dev)
    z = mt.zeros(4, 6, dtype=D, device=dev)
    rows = {
        "layer_norm": lambda x: F.layer_norm(x, (6,)),
        "group_norm": lambda x: F.group_norm(x.reshape(4, 6, 1), 3),
        "batch_norm_stats": lambda x: F.batch_norm(x, None, None, training=True),
        "softplus": F.softplus, "silu": F.silu, "leaky_relu": F.leaky_relu, "elu": F.elu,
        "hardtanh": F.hardtanh, "gelu": F.gelu,
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "mish": F.mish, "selu": F.selu, "cumsum": lambda x: x.cumsum(1),
        "cumprod": lambda x: x.cumprod(1), "prod": lambda x: x.prod(1),
        "sort": lambda x: x.sort(1)[0], "topk": lambda x: x.topk(2, 1)[0],
        "gather": lambda x: x.gather(1, t([[0, 1]] * 4)),
        "index_select": lambda x: x.index_select(1, t([0, 3])),
        "masked_fill": lambda x: x.masked_fill(x > 0, 0.5),
        "einsum": lambda x: mt.einsum("ij,kj->ik", x, x),
        "bmm": lambda x: mt.bmm(x.reshape(2, 2, 6), x.reshape(2, 6, 2)),
        "std": lambda x: x.std(1), "var": lambda x: x.var(), "logsumexp": lambda x: x.logsumexp(1),
        "norm": lambda x: x.norm(dim=1),
        "cross_entropy": lambda x: F.cross_entropy(x, tgt, label_smoothing=0.1),
        "nll_loss": lambda x: F.nll_loss(x.log_softmax(1), tgt),
        "bce": lambda x: F.binary_cross_entropy(x.sigmoid(), half),
        "bce_logits": lambda x: F.binary_cross_entropy_with_logits(x, half),
        "kl_div": lambda x: F.kl_div(x.log_softmax(1), x.softmax(0), reduction="batchmean"),
        "smooth_l1": lambda x: F.smooth_l1_loss(x, x.flip(0)),
        "cosine_similarity": lambda x: F.cosine_similarity(x, x.flip(0)),
        "cdist": lambda x: mt.cdist(x, x.flip(0)), "pdist": F.pdist,
        "atan2": lambda x: mt.atan2(x, x.flip(0)), "lerp": lambda x: mt.lerp(x, x.flip(0), 0.3),
        "pow": lambda x: x.abs().pow(x), "erf": mt.erf, "lgamma": lambda x: x.abs().lgamma(),
        "xlogy": lambda x: mt.xlogy(x, x.abs()), "triu": lambda x: x.triu(),
        "diagonal": lambda x: x[:4, :4].diagonal(), "roll": lambda x: x.roll(1, 1),
        "scatter_add": lambda x: z.scatter_add(1, t([[0, 1]] * 4), x[:, :2]),
        "index_add": lambda x: z.index_add(0, t([1, 0, 3, 2]), x),
        "inplace_chain": lambda x: (x * 1).mul_(2).exp_(),
        "inplace_on_view": lambda x: (lambda y: (y[0].mul_(3), y)[1])(x.clone()),
        "cholesky": lambda x: mt.linalg.cholesky(x @ x.t() + eye),
    }
    images = {
        "conv2d": lambda x: F.conv2d(x, k, padding=1),
        "conv_transpose2d": lambda x: F.conv_transpose2d(x, k.transpose(0, 1)),
        "max_pool2d": lambda x: F.max_pool2d(x, 2), "avg_pool2d": lambda x: F.avg_pool2d(x, 2),
        "adaptive_avg_pool2d": lambda x: F.adaptive_avg_pool2d(x, 3),
        "adaptive_max_pool2d": lambda x: F.adaptive_max_pool2d(x, 3),
        "bilinear": lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
        "nearest": lambda x: F.interpolate(x, scale_factor=2),
        "reflect_pad": lambda x: F.pad(x, (1, 1, 1, 1), mode="reflect"),
        "unfold": lambda x: F.unfold(x, 2),
        "grid_sample": lambda x: F.grid_sample(x, grid, align_corners=False),
        "instance_norm": F.instance_norm,
        "local_response_norm": lambda x: F.local_response_norm(x, 2),
        "max_pool3d": lambda x: F.max_pool3d(x.unsqueeze(2).repeat(1, 1, 2, 1, 1), 2),
    }
    sequences = {
        "lstm": lambda x: mods["lstm"](x)[0], "gru": lambda x: mods["gru"](x)[0],
        "multihead_attention": lambda x: mods["mha"](x, x, x)[0],
        "sdpa_causal": lambda x: F.scaled_dot_product_attention(x, x, x, is_causal=True),
    }
    cases = {name: (fn, (4, 6)) for name, fn in rows.items()}
    cases.update({name: (fn, (2, 3, 8, 8)) for name, fn in images.items()})
    cases.update({name: (fn, (5, 2, 6)) for name, fn in sequences.items()})
    return cases


@pytest.mark.parametrize("op", sorted(_cases("cpu", _modules("cpu"))))
def test_checkpointed_op_gives_the_plain_gradients(op, device) -> None:
    mods = _modules(device)
    fn, shape = _cases(device, mods)[op]
    x = mt.randn(*shape, dtype=D, device=device).requires_grad_()
    params = [x, *(p for m in mods.values() for p in m.parameters())]

    def grads():
        out = [None if p.grad is None else p.grad.cpu().numpy() for p in params]
        for p in params:
            p.grad = None
        return out

    fn(x).sum().backward()
    ref = grads()
    for reentrant in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # kl_div's reduction notice and the like
            checkpoint(fn, x, use_reentrant=reentrant).sum().backward()
        for r, g in zip(ref, grads()):
            assert (r is None) == (g is None)
            if r is not None:
                np.testing.assert_array_equal(g, r, err_msg=op)
