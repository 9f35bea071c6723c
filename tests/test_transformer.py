"""Attention and Transformer layers against PyTorch: scaled_dot_product_attention,
MultiheadAttention, TransformerEncoderLayer/Encoder, TransformerDecoderLayer/Decoder and
Transformer. Default init after the same seed (bitwise), forward and backward with copied
weights (outputs, attention weights, gradients of inputs and of every parameter), masks of
every kind, train-mode dropout (PyTorch's masks), errors; and finite differences."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _gradcheck import finite_difference_check
from _torch_compare import assert_init_equal, copy_weights

import microtorch as mt
import microtorch.nn as nn
import microtorch.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = [pytest.mark.torch,
              pytest.mark.filterwarnings("ignore:enable_nested_tensor is True"),
              pytest.mark.filterwarnings("ignore:Support for mismatched"),
              pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")]

TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-10, atol=1e-10)}


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _close(a, b, dtype: str, what: str) -> None:
    a = a.detach().cpu().numpy() if isinstance(a, mt.Tensor) else a
    np.testing.assert_allclose(a, b.detach().numpy(), **TOL[dtype], err_msg=what,
                               equal_nan=True)


def _pair(arr, device, dtype=None, grad=False):
    """The same array as a microtorch tensor (on ``device``) and a torch tensor."""
    if dtype is not None:
        arr = arr.astype(dtype)
    return (mt.tensor(arr, device=device, requires_grad=grad),
            torch.tensor(arr, requires_grad=grad))


def _mask_kwargs(device, is_causal: bool = False, **masks):
    """Keyword arguments for microtorch and for torch: each mask array given (None left out)
    as a pair of tensors, and ``is_causal=True`` when asked."""
    mkw, tkw = {}, {}
    for name, arr in masks.items():
        if arr is not None:
            mkw[name], tkw[name] = _pair(arr, device)
    if is_causal:
        mkw["is_causal"] = tkw["is_causal"] = True
    return mkw, tkw


def _backward_both(out, tout, rng, dtype: str, device) -> None:
    """Backpropagate ``sum(out * w)`` through both, for one random ``w``."""
    w = rng.standard_normal(tuple(tout.shape)).astype(dtype)
    (out * mt.tensor(w, device=device)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()


def _compare_params_grads(mod, tmod, dtype: str) -> None:
    named = dict(mod.named_parameters())
    tnamed = dict(tmod.named_parameters())
    assert list(named) == list(tnamed)
    for k, tp in tnamed.items():
        if tp.grad is None:
            assert named[k].grad is None, k
        else:
            _close(named[k].grad, tp.grad, dtype, f"grad of {k}")


# -- scaled_dot_product_attention ------------------------------------------------------------------
SDPA_CASES = [
    ("plain", {}),
    ("bool_mask", {"attn_mask": "bool"}),
    ("float_mask", {"attn_mask": "float"}),
    ("causal", {"is_causal": True}),
    ("scale", {"scale": 0.37}),
    ("bool_mask_dead_row", {"attn_mask": "dead"}),
    ("float_mask_dead_row", {"attn_mask": "dead_float"}),
]


def _sdpa_mask(kind, L, S, rng):
    if kind == "bool":
        m = rng.random((L, S)) > 0.4
        m[:, 0] = True
        return m
    if kind == "float":
        return rng.standard_normal((2, 1, L, S))
    if kind == "dead":
        m = rng.random((L, S)) > 0.4
        m[:, 0] = True
        m[1] = False
        return m
    m = rng.standard_normal((L, S))
    m[2] = -np.inf
    return m


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", SDPA_CASES, ids=lambda c: c[0])
def test_sdpa_forward_backward_matches_torch(case, dtype, device):
    _, kw = case
    rng = _rng(1)
    L, S = 4, 6
    arrays = [rng.standard_normal(s).astype(dtype) for s in [(2, 3, L, 5), (2, 3, S, 5),
                                                             (2, 3, S, 7)]]
    mkw, tkw = dict(kw), dict(kw)
    if "attn_mask" in kw:
        m = _sdpa_mask(kw["attn_mask"], L, S, rng)
        if m.dtype != bool:
            m = m.astype(dtype)
        mkw["attn_mask"], tkw["attn_mask"] = _pair(m, device)
    pairs = [_pair(a, device, grad=True) for a in arrays]
    out = F.scaled_dot_product_attention(*[p[0] for p in pairs], **mkw)
    tout = TF.scaled_dot_product_attention(*[p[1] for p in pairs], **tkw)
    _close(out, tout, dtype, "output")
    _backward_both(out, tout, rng, dtype, device)
    for name, (a, b) in zip("qkv", pairs):
        _close(a.grad, b.grad, dtype, f"grad of {name}")
        assert np.isfinite(a.grad.cpu().numpy()).all()


def test_sdpa_gqa_and_unbatched(device):
    rng = _rng(2)
    q, k, v = (rng.standard_normal(s) for s in [(2, 4, 3, 5), (2, 2, 6, 5), (2, 2, 6, 5)])
    out = F.scaled_dot_product_attention(*(mt.tensor(a, device=device) for a in (q, k, v)),
                                         enable_gqa=True)
    tout = TF.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)),
                                           enable_gqa=True)
    _close(out, tout, "float64", "gqa")
    q, k, v = (rng.standard_normal(s) for s in [(3, 5), (6, 5), (6, 2)])
    out = F.scaled_dot_product_attention(*(mt.tensor(a, device=device) for a in (q, k, v)),
                                         is_causal=True)
    tout = TF.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)),
                                           is_causal=True)
    _close(out, tout, "float64", "unbatched causal")


def test_sdpa_dropout_replays_torch_stream():
    rng = _rng(3)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in [(2, 3, 4, 5)] * 3)
    for seed in (0, 5):
        mt.manual_seed(seed)
        torch.manual_seed(seed)
        out = F.scaled_dot_product_attention(*(mt.tensor(a) for a in (q, k, v)),
                                             dropout_p=0.3)
        tout = TF.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)),
                                               dropout_p=0.3)
        _close(out, tout, "float32", "dropout")
        assert mt.rand(2).tolist() == torch.rand(2).tolist()


def test_sdpa_double_backward(device):
    rng = _rng(4)
    q, k, v = (mt.tensor(rng.standard_normal((2, 3, 4)), device=device, requires_grad=True)
               for _ in range(3))
    tq, tk, tv = (torch.tensor(t.detach().cpu().numpy(), requires_grad=True) for t in (q, k, v))
    m = rng.random((3, 3)) > 0.3
    m[:, 0] = True
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mt.tensor(m, device=device))
    tout = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.tensor(m))
    (g,) = mt.autograd.grad(out.pow(2).sum(), [q], create_graph=True)
    (tg,) = torch.autograd.grad(tout.pow(2).sum(), [tq], create_graph=True)
    _close(g, tg, "float64", "first")
    g.sum().backward()
    tg.sum().backward()
    for a, b in ((q, tq), (k, tk), (v, tv)):
        _close(a.grad, b.grad, "float64", "second")


def test_sdpa_finite_differences(device):
    rng = _rng(5)
    m = rng.random((3, 4)) > 0.3
    m[:, 0] = True
    mask = mt.tensor(m, device=device)
    finite_difference_check(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
        [rng.standard_normal((2, 3, 2)), rng.standard_normal((2, 4, 2)),
         rng.standard_normal((2, 4, 3))], device)
    finite_difference_check(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.8),
        [rng.standard_normal((3, 2)), rng.standard_normal((3, 2)),
         rng.standard_normal((3, 2))], device)


def test_sdpa_errors():
    q = mt.zeros(2, 3, 4)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when "
                                           "is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=mt.ones(3, 3, dtype=mt.bool),
                                       is_causal=True)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, q.double(), q)


# -- MultiheadAttention ----------------------------------------------------------------------------
MHA_INIT = [
    ((8, 2), {}),
    ((8, 2), {"bias": False}),
    ((8, 4), {"add_bias_kv": True}),
    ((8, 4), {"add_bias_kv": True, "bias": False, "add_zero_attn": True}),
    ((6, 3), {"kdim": 4, "vdim": 5}),
    ((6, 2), {"kdim": 4}),
    ((6, 1), {"batch_first": True, "dropout": 0.2}),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", MHA_INIT, ids=lambda c: f"{c[0]}{c[1]}")
def test_mha_default_init_matches_torch_bitwise(case, dtype):
    args, kwargs = case
    for seed in (0, 123):
        mt.manual_seed(seed)
        torch.manual_seed(seed)
        mod = nn.MultiheadAttention(*args, **kwargs, dtype=getattr(mt, dtype))
        tmod = torch.nn.MultiheadAttention(*args, **kwargs, dtype=getattr(torch, dtype))
        assert_init_equal(torch, mod, tmod, dtype)
        assert mod._qkv_same_embed_dim == tmod._qkv_same_embed_dim
        assert mod.head_dim == tmod.head_dim


def _mha_masks(kind: str, L: int, S: int, N: int, H: int, rng, dtype: str):
    """(attn_mask, key_padding_mask) arrays in MHA's convention (True = do not attend)."""
    attn, kpm = None, None
    if "attn2d" in kind:
        attn = rng.random((L, S)) > 0.6
        attn[:, 0] = False
    if "attn3d" in kind:
        attn = rng.random((N * H, L, S)) > 0.6
        attn[:, :, 0] = False
    if "float" in kind and attn is not None:
        attn = np.where(attn, -np.inf, rng.standard_normal(attn.shape)).astype(dtype)
    if "causal" in kind:
        attn = np.triu(np.full((L, S), -np.inf), 1).astype(dtype)
    if "kpm" in kind:
        kpm = rng.random((N, S)) > 0.6
        kpm[:, 0] = False
        if "fkpm" in kind:
            kpm = np.where(kpm, -np.inf, 0.0).astype(dtype)
    return attn, kpm


# (constructor args, kwargs, self-attention?, mask kind, need_weights, average)
MHA_FWD = [
    ((8, 2), {}, True, "", True, True),
    ((8, 2), {}, True, "", False, True),
    ((8, 2), {}, False, "attn2d", True, False),
    ((8, 2), {"batch_first": True}, True, "attn2d kpm", True, True),
    ((8, 2), {"batch_first": True}, False, "attn3d float", False, True),
    ((8, 4), {"bias": False}, True, "kpm", False, True),
    ((8, 4), {"add_bias_kv": True}, False, "attn2d kpm", True, False),
    ((8, 4), {"add_zero_attn": True}, True, "attn3d kpm", False, True),
    ((8, 2), {"add_bias_kv": True, "add_zero_attn": True}, False, "attn2d float kpm fkpm",
     True, True),
    ((6, 3), {"kdim": 4, "vdim": 5}, False, "attn2d kpm", True, True),
    ((6, 3), {"kdim": 4, "vdim": 5, "batch_first": True}, False, "attn3d", False, True),
    ((8, 2), {}, True, "causal", False, True),
    ((8, 2), {}, True, "causal kpm", True, True),
]


def _mha_inputs(mod_kwargs, self_attn, E, L, S, N, rng, dtype, batch_first, unbatched=False):
    kd, vd = mod_kwargs.get("kdim", E), mod_kwargs.get("vdim", E)

    def shape(T, D):
        if unbatched:
            return (T, D)
        return (N, T, D) if batch_first else (T, N, D)
    if self_attn:
        return [rng.standard_normal(shape(L, E)).astype(dtype)]
    return [rng.standard_normal(shape(L, E)).astype(dtype),
            rng.standard_normal(shape(S, kd)).astype(dtype),
            rng.standard_normal(shape(S, vd)).astype(dtype)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", MHA_FWD, ids=lambda c: f"{c[0]}{c[1]}-self{c[2]}-{c[3]}-"
                                                        f"w{c[4]}{c[5]}")
def test_mha_forward_backward_matches_torch(case, dtype, device):
    args, kwargs, self_attn, mask_kind, need_weights, average = case
    rng = _rng(7)
    tmod = torch.nn.MultiheadAttention(*args, **kwargs, dtype=getattr(torch, dtype))
    mod = nn.MultiheadAttention(*args, **kwargs, dtype=getattr(mt, dtype), device=device)
    copy_weights(tmod, mod, device)
    E, H = args
    L, N = 5, 3
    S = L if self_attn else 4
    arrays = _mha_inputs(kwargs, self_attn, E, L, S, N, rng, dtype,
                         kwargs.get("batch_first", False))
    pairs = [_pair(a, device, grad=True) for a in arrays]
    attn, kpm = _mha_masks(mask_kind, L, S, N, H, rng, dtype)
    mkw, tkw = _mask_kwargs(device, "causal" in mask_kind, attn_mask=attn, key_padding_mask=kpm)
    ins = [p[0] for p in pairs] * (3 if self_attn else 1)
    tins = [p[1] for p in pairs] * (3 if self_attn else 1)
    out, weights = mod(*ins, need_weights=need_weights, average_attn_weights=average, **mkw)
    tout, tweights = tmod(*tins, need_weights=need_weights, average_attn_weights=average, **tkw)
    _close(out, tout, dtype, "output")
    if need_weights:
        assert tuple(weights.shape) == tuple(tweights.shape)
        _close(weights, tweights, dtype, "weights")
    else:
        assert weights is None and tweights is None
    w = rng.standard_normal(tuple(tout.shape)).astype(dtype)
    loss = (out * mt.tensor(w, device=device)).sum()
    tloss = (tout * torch.tensor(w)).sum()
    if need_weights:
        w2 = rng.standard_normal(tuple(tweights.shape)).astype(dtype)
        loss = loss + (weights * mt.tensor(w2, device=device)).sum()
        tloss = tloss + (tweights * torch.tensor(w2)).sum()
    loss.backward()
    tloss.backward()
    for i, (a, b) in enumerate(pairs):
        _close(a.grad, b.grad, dtype, f"grad of input {i}")
    _compare_params_grads(mod, tmod, dtype)


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_unbatched_matches_torch(need_weights, device):
    rng = _rng(8)
    tmod = torch.nn.MultiheadAttention(6, 2, kdim=3, vdim=4, dtype=torch.float64)
    mod = nn.MultiheadAttention(6, 2, kdim=3, vdim=4, dtype=mt.float64, device=device)
    copy_weights(tmod, mod, device)
    arrays = [rng.standard_normal(s) for s in [(5, 6), (4, 3), (4, 4)]]
    pairs = [_pair(a, device, grad=True) for a in arrays]
    attn = rng.random((2, 5, 4)) > 0.6
    attn[:, :, 0] = False
    kpm = np.array([False, True, False, False])
    out, wts = mod(*(p[0] for p in pairs), need_weights=need_weights,
                   attn_mask=mt.tensor(attn, device=device),
                   key_padding_mask=mt.tensor(kpm, device=device), average_attn_weights=False)
    tout, twts = tmod(*(p[1] for p in pairs), need_weights=need_weights,
                      attn_mask=torch.tensor(attn), key_padding_mask=torch.tensor(kpm),
                      average_attn_weights=False)
    _close(out, tout, "float64", "output")
    if need_weights:
        _close(wts, twts, "float64", "weights")
    out.sum().backward()
    tout.sum().backward()
    for a, b in pairs:
        _close(a.grad, b.grad, "float64", "input grad")
    _compare_params_grads(mod, tmod, "float64")


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_mha_fully_masked_rows_as_torch():
    """need_weights=True: NaN (plain softmax); need_weights=False: zeros (SDPA), as PyTorch."""
    rng = _rng(9)
    tmod = torch.nn.MultiheadAttention(4, 2, dtype=torch.float64)
    mod = nn.MultiheadAttention(4, 2, dtype=mt.float64)
    with torch.no_grad():
        tmod.out_proj.bias.copy_(torch.tensor(rng.standard_normal(4)))
    copy_weights(tmod, mod)
    x = rng.standard_normal((3, 2, 4))
    kpm = np.array([[True] * 3, [False, True, False]])
    for need_weights in (True, False):
        out, w = mod(mt.tensor(x), mt.tensor(x), mt.tensor(x), need_weights=need_weights,
                     key_padding_mask=mt.tensor(kpm))
        tx = torch.tensor(x)
        tout, tw = tmod(tx, tx, tx, need_weights=need_weights,
                        key_padding_mask=torch.tensor(kpm))
        _close(out, tout, "float64", f"output need_weights={need_weights}")
        assert np.isnan(out.detach().numpy()).any() == need_weights
        if need_weights:
            _close(w, tw, "float64", "weights")


def test_mha_double_backward():
    rng = _rng(10)
    tmod = torch.nn.MultiheadAttention(4, 2, dtype=torch.float64)
    mod = nn.MultiheadAttention(4, 2, dtype=mt.float64)
    copy_weights(tmod, mod)
    x, tx = _pair(rng.standard_normal((3, 2, 4)), "cpu", grad=True)
    out = mod(x, x, x)[0]
    tout = tmod(tx, tx, tx)[0]
    (g,) = mt.autograd.grad(out.pow(2).sum(), [x], create_graph=True)
    (tg,) = torch.autograd.grad(tout.pow(2).sum(), [tx], create_graph=True)
    _close(g, tg, "float64", "first")
    (g * g).sum().backward()
    (tg * tg).sum().backward()
    _close(x.grad, tx.grad, "float64", "second")
    _compare_params_grads(mod, tmod, "float64")


def test_mha_finite_differences(device):
    rng = _rng(11)
    mt.manual_seed(0)
    mod = nn.MultiheadAttention(4, 2, add_bias_kv=True, dtype=mt.float64, device=device)
    mask = mt.tensor(np.array([[False, True, False], [False, False, True]]), device=device)
    finite_difference_check(
        lambda q, k: mod(q, k, k, key_padding_mask=mask, average_attn_weights=False)[1],
        [rng.standard_normal((2, 2, 4)), rng.standard_normal((3, 2, 4))], device)
    finite_difference_check(
        lambda q, k, v: mod(q, k, v, need_weights=False)[0],
        [rng.standard_normal((2, 4)), rng.standard_normal((3, 4)), rng.standard_normal((3, 4))],
        device)


def test_mha_train_mode_dropout_replays_torch_stream():
    rng = _rng(12)
    for need_weights in (True, False):
        mt.manual_seed(4)
        torch.manual_seed(4)
        mod = nn.MultiheadAttention(8, 2, dropout=0.3)
        tmod = torch.nn.MultiheadAttention(8, 2, dropout=0.3)
        x = rng.standard_normal((5, 3, 8)).astype(np.float32)
        out, w = mod(mt.tensor(x), mt.tensor(x), mt.tensor(x), need_weights=need_weights)
        tx = torch.tensor(x)
        tout, tw = tmod(tx, tx, tx, need_weights=need_weights)
        _close(out, tout, "float32", "output")
        if need_weights:
            _close(w, tw, "float32", "weights")
        assert mt.rand(2).tolist() == torch.rand(2).tolist()


def test_mha_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(6, 4)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0, got "
                                         "embed_dim=0 and num_heads=2 instead"):
        nn.MultiheadAttention(0, 2)
    mod = nn.MultiheadAttention(4, 2)
    x = mt.zeros(3, 2, 4)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is .*\[3, 4\]\), "
                                           r"but should be \(3, 3\)\."):
        mod(x, x, x, attn_mask=mt.zeros(3, 4, dtype=mt.bool))
    with pytest.raises(RuntimeError, match=r"The shape of the 3D attn_mask is .*\[2, 3, 3\]\), "
                                           r"but should be \(4, 3, 3\)\."):
        mod(x, x, x, attn_mask=mt.zeros(2, 3, 3, dtype=mt.bool))
    with pytest.raises(AssertionError, match="expected `attn_mask` to be `None`, 2-D or 3-D but "
                                             "found 4-D tensor instead"):
        mod(x, x, x, attn_mask=mt.zeros(1, 2, 3, 3))
    with pytest.raises(AssertionError, match="expected `key_padding_mask` to be `None` or 2-D"):
        mod(x, x, x, key_padding_mask=mt.zeros(3, dtype=mt.bool))
    with pytest.raises(AssertionError, match="Expected key_padded_mask.shape\\[1\\] to be 3, "
                                             "but got 4"):
        mod(x, x, x, key_padding_mask=mt.zeros(2, 4, dtype=mt.bool))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask are "
                                             "supported"):
        mod(x, x, x, attn_mask=mt.zeros(3, 3, dtype=mt.int64))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        mod(x, x, x, is_causal=True)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 4, but got 5"):
        mod(mt.zeros(3, 2, 5), x, x)
    with pytest.raises(AssertionError, match="query should be unbatched 2D or batched 3D tensor "
                                             "but received 4-D query tensor"):
        mod(mt.zeros(1, 3, 2, 4), x, x)
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask"):
        mod(x, x, x, attn_mask=mt.zeros(3, 3), key_padding_mask=mt.zeros(2, 3, dtype=mt.bool))


# -- Transformer encoder -----------------------------------------------------------------------
ENC_KW = [
    {},
    {"batch_first": True},
    {"norm_first": True},
    {"activation": "gelu", "batch_first": True, "norm_first": True},
    {"bias": False, "layer_norm_eps": 1e-6},
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", ENC_KW, ids=str)
def test_encoder_default_init_matches_torch_bitwise(kw, dtype):
    for seed in (0, 123):
        mt.manual_seed(seed)
        torch.manual_seed(seed)
        layer = nn.TransformerEncoderLayer(8, 2, 16, **kw, dtype=getattr(mt, dtype))
        tlayer = torch.nn.TransformerEncoderLayer(8, 2, 16, **kw, dtype=getattr(torch, dtype))
        assert_init_equal(torch, layer, tlayer, dtype)
        enc = nn.TransformerEncoder(layer, 3, norm=nn.LayerNorm(8, dtype=getattr(mt, dtype)))
        tenc = torch.nn.TransformerEncoder(tlayer, 3,
                                           norm=torch.nn.LayerNorm(8, dtype=getattr(torch,
                                                                                    dtype)))
        assert_init_equal(torch, enc, tenc, dtype)
        # deep copies: independent parameters
        assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight


# (layer kwargs, mask kind, unbatched)
ENC_FWD = [
    ({}, "", False),
    ({"batch_first": True}, "attn2d kpm", False),
    ({"norm_first": True}, "attn2d float", False),
    ({"activation": "gelu"}, "kpm", False),
    ({"activation": "gelu", "norm_first": True, "batch_first": True}, "causal", False),
    ({"bias": False}, "causal kpm", False),
    ({}, "attn3d", False),
    ({"norm_first": True}, "attn2d", True),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", ENC_FWD, ids=lambda c: f"{c[0]}-{c[1]}-unbatched{c[2]}")
def test_encoder_forward_backward_matches_torch(case, dtype, device):
    kw, mask_kind, unbatched = case
    rng = _rng(13)
    E, H, L, N = 8, 2, 5, 3
    tdt, mdt = getattr(torch, dtype), getattr(mt, dtype)
    tenc = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(E, H, 16, **kw, dtype=tdt), 2,
        norm=torch.nn.LayerNorm(E, dtype=tdt))
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, 16, **kw, dtype=mdt), 2,
                                norm=nn.LayerNorm(E, dtype=mdt)).to(device)
    copy_weights(tenc, enc, device)
    enc.eval()
    tenc.eval()
    bf = kw.get("batch_first", False)
    shape = (L, E) if unbatched else ((N, L, E) if bf else (L, N, E))
    x, tx = _pair(rng.standard_normal(shape).astype(dtype), device, grad=True)
    attn, kpm = _mha_masks(mask_kind, L, L, N, H, rng, dtype)
    mkw, tkw = _mask_kwargs(device, "causal" in mask_kind, mask=attn, src_key_padding_mask=kpm)
    out = enc(x, **mkw)
    tout = tenc(tx, **tkw)
    _close(out, tout, dtype, "output")
    _backward_both(out, tout, rng, dtype, device)
    _close(x.grad, tx.grad, dtype, "input grad")
    _compare_params_grads(enc, tenc, dtype)


def test_encoder_layer_callable_activation_and_module_activation():
    rng = _rng(14)
    x = rng.standard_normal((4, 2, 8))
    for act, tact in ((F.silu, TF.silu), (nn.GELU(), torch.nn.GELU())):
        tlayer = torch.nn.TransformerEncoderLayer(8, 2, 16, activation=tact, dropout=0.0,
                                                  dtype=torch.float64)
        layer = nn.TransformerEncoderLayer(8, 2, 16, activation=act, dropout=0.0,
                                           dtype=mt.float64)
        assert [n for n, _ in layer.named_parameters()] == \
            [n for n, _ in tlayer.named_parameters()]
        copy_weights(tlayer, layer)
        _close(layer(mt.tensor(x)), tlayer(torch.tensor(x)), "float64", "output")
        assert layer.activation_relu_or_gelu == tlayer.activation_relu_or_gelu


def test_encoder_train_mode_dropout_replays_torch_stream():
    rng = _rng(15)
    x = rng.standard_normal((5, 3, 8)).astype(np.float32)
    for kw in ({}, {"batch_first": True}, {"norm_first": True, "batch_first": True}):
        mt.manual_seed(21)
        torch.manual_seed(21)
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.25, **kw), 2)
        tenc = torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.25, **kw), 2)
        mx, tx = _pair(x, "cpu", grad=True)
        out, tout = enc(mx), tenc(tx)
        _close(out, tout, "float32", "train output")
        out.sum().backward()
        tout.sum().backward()
        _close(mx.grad, tx.grad, "float32", "train input grad")
        _compare_params_grads(enc, tenc, "float32")
        assert mt.rand(2).tolist() == torch.rand(2).tolist()


@pytest.mark.parametrize("kw", [{}, {"batch_first": True, "norm_first": True}], ids=str)
def test_decoder_layer_train_mode_dropout_replays_torch_stream(kw):
    rng = _rng(17)
    tgt = rng.standard_normal((5, 3, 8)).astype(np.float32)
    mem = rng.standard_normal((5, 3, 8) if kw else (4, 3, 8)).astype(np.float32)
    mt.manual_seed(22)
    torch.manual_seed(22)
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.3, **kw)
    tlayer = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.3, **kw)
    out = layer(mt.tensor(tgt), mt.tensor(mem))
    tout = tlayer(torch.tensor(tgt), torch.tensor(mem))
    _close(out, tout, "float32", "train output")
    out.sum().backward()
    tout.sum().backward()
    _compare_params_grads(layer, tlayer, "float32")
    assert mt.rand(2).tolist() == torch.rand(2).tolist()


@pytest.mark.parametrize("grad", [True, False])
@pytest.mark.parametrize("left_aligned", [True, False])
def test_encoder_inference_padding_as_torch_nested_path(grad, left_aligned, device):
    """In eval mode without gradients PyTorch runs padded batches as nested tensors: padded
    positions come out as zeros before the final norm (but not with a right-aligned mask)."""
    rng = _rng(18)
    torch.manual_seed(3)
    tenc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16,
                                                                        batch_first=True), 2,
                                       norm=torch.nn.LayerNorm(8)).eval()
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2,
                                norm=nn.LayerNorm(8)).to(device).eval()
    copy_weights(tenc, enc, device)
    x = rng.standard_normal((3, 5, 8)).astype(np.float32)
    kpm = np.zeros((3, 5), bool)
    kpm[0, 3:] = kpm[2, 1:] = True
    if not left_aligned:
        kpm[1, 1] = True
    with torch.set_grad_enabled(grad), mt.set_grad_enabled(grad):
        out = enc(mt.tensor(x, device=device), src_key_padding_mask=mt.tensor(kpm, device=device))
        tout = tenc(torch.tensor(x), src_key_padding_mask=torch.tensor(kpm))
    _close(out, tout, "float32", "output")


def test_mha_inference_matches_torch_fast_path():
    rng = _rng(19)
    for bf in (True, False):
        tmod = torch.nn.MultiheadAttention(8, 2, batch_first=bf).eval()
        mod = nn.MultiheadAttention(8, 2, batch_first=bf).eval()
        copy_weights(tmod, mod)
        x = rng.standard_normal((3, 4, 8)).astype(np.float32)
        kpm = np.zeros((3, 4) if bf else (4, 3), bool)
        kpm[:, -1] = True
        for need_weights in (True, False):
            with torch.no_grad(), mt.no_grad():
                tx, mx = torch.tensor(x), mt.tensor(x)
                out, w = mod(mx, mx, mx, key_padding_mask=mt.tensor(kpm),
                             need_weights=need_weights)
                tout, tw = tmod(tx, tx, tx, key_padding_mask=torch.tensor(kpm),
                                need_weights=need_weights)
            _close(out, tout, "float32", "output")
            if need_weights:
                _close(w, tw, "float32", "weights")


def test_encoder_nested_tensor_warning_and_errors():
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    with pytest.warns(UserWarning, match="enable_nested_tensor is True, but "
                                         "self.use_nested_tensor is False because "
                                         "encoder_layer.self_attn.batch_first was not True"):
        enc = nn.TransformerEncoder(layer, 2)
    assert not enc.use_nested_tensor
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.TransformerEncoderLayer(8, 3)
    with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask is"):
        layer(mt.zeros(5, 2, 8), src_mask=mt.zeros(4, 4))


def test_generate_square_subsequent_mask_and_causal_detection():
    for sz in (1, 4):
        m = nn.Transformer.generate_square_subsequent_mask(sz)
        t = torch.nn.Transformer.generate_square_subsequent_mask(sz)
        assert m.dtype == mt.float32
        np.testing.assert_array_equal(m.numpy(), t.numpy())
    m = nn.Transformer.generate_square_subsequent_mask(3, dtype=mt.float64)
    assert m.dtype == mt.float64
    from microtorch.nn.modules.transformer import _detect_is_causal_mask
    assert _detect_is_causal_mask(m, None, 3)
    assert not _detect_is_causal_mask(mt.zeros(3, 3), None, 3)
    assert not _detect_is_causal_mask(m, False, 3)


# -- decoder and the full Transformer ------------------------------------------------------
@pytest.mark.parametrize("kw", [{}, {"norm_first": True, "batch_first": True,
                                     "activation": "gelu"}], ids=str)
def test_decoder_and_transformer_match_torch(kw, device):
    rng = _rng(16)
    mt.manual_seed(2)
    torch.manual_seed(2)
    model = nn.Transformer(8, 2, 2, 2, 16, dtype=mt.float64, **kw)
    tmodel = torch.nn.Transformer(8, 2, 2, 2, 16, dtype=torch.float64, **kw)
    assert_init_equal(torch, model, tmodel, "float64")
    model.to(device).eval()
    tmodel.eval()
    bf = kw.get("batch_first", False)
    src_a = rng.standard_normal((3, 5, 8) if bf else (5, 3, 8))
    tgt_a = rng.standard_normal((3, 4, 8) if bf else (4, 3, 8))
    (src, tsrc), (tgt, ttgt) = _pair(src_a, device, grad=True), _pair(tgt_a, device, grad=True)
    tgt_mask_a = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    kpm = rng.random((3, 5)) > 0.6
    kpm[:, 0] = False
    out = model(src, tgt, tgt_mask=mt.tensor(tgt_mask_a.numpy(), device=device),
                src_key_padding_mask=mt.tensor(kpm, device=device),
                memory_key_padding_mask=mt.tensor(kpm, device=device))
    tout = tmodel(tsrc, ttgt, tgt_mask=tgt_mask_a, src_key_padding_mask=torch.tensor(kpm),
                  memory_key_padding_mask=torch.tensor(kpm))
    _close(out, tout, "float64", "output")
    _backward_both(out, tout, rng, "float64", device)
    _close(src.grad, tsrc.grad, "float64", "src grad")
    _close(tgt.grad, ttgt.grad, "float64", "tgt grad")
    _compare_params_grads(model, tmodel, "float64")


def test_transformer_errors():
    model = nn.Transformer(8, 2, 1, 1, 16)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(mt.zeros(5, 3, 8), mt.zeros(4, 2, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to "
                                           "d_model"):
        model(mt.zeros(5, 3, 8), mt.zeros(4, 3, 6))


def test_exports():
    for name in ("MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
                 "TransformerDecoderLayer", "TransformerDecoder", "Transformer"):
        assert name in nn.__all__ and hasattr(nn, name)
    for name in ("scaled_dot_product_attention", "multi_head_attention_forward"):
        assert name in F.__all__ and hasattr(F, name)


DEC_FWD = [
    ({}, "tgt_mask"),
    ({"batch_first": True}, "tgt_mask memory_mask tgt_kpm"),
    ({"norm_first": True}, "memory_mask memory_kpm"),
    ({"activation": "gelu", "bias": False}, "tgt_causal tgt_kpm memory_kpm"),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", DEC_FWD, ids=lambda c: f"{c[0]}-{c[1]}")
def test_decoder_forward_backward_matches_torch(case, dtype, device):
    kw, masks = case
    rng = _rng(20)
    E, H, T, S, N = 8, 2, 4, 5, 3
    tdt, mdt = getattr(torch, dtype), getattr(mt, dtype)
    tdec = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(E, H, 16, **kw,
                                                                        dtype=tdt), 2)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, 16, **kw, dtype=mdt),
                                2).to(device)
    copy_weights(tdec, dec, device)
    dec.eval()
    tdec.eval()
    bf = kw.get("batch_first", False)
    tgt, ttgt = _pair(rng.standard_normal((N, T, E) if bf else (T, N, E)).astype(dtype), device,
                      grad=True)
    mem, tmem = _pair(rng.standard_normal((N, S, E) if bf else (S, N, E)).astype(dtype), device,
                      grad=True)
    mkw, tkw = {}, {}
    if "tgt_mask" in masks:
        m = rng.random((T, T)) > 0.6
        m[:, 0] = False
        mkw["tgt_mask"], tkw["tgt_mask"] = _pair(m, device)
    if "tgt_causal" in masks:
        m = np.triu(np.full((T, T), -np.inf), 1).astype(dtype)
        mkw["tgt_mask"], tkw["tgt_mask"] = _pair(m, device)
        mkw["tgt_is_causal"] = tkw["tgt_is_causal"] = True
    if "memory_mask" in masks:
        m = np.where(rng.random((T, S)) > 0.6, -np.inf, rng.standard_normal((T, S)))
        m[:, 0] = 0.0
        mkw["memory_mask"], tkw["memory_mask"] = _pair(m.astype(dtype), device)
    for name, length in (("tgt_kpm", T), ("memory_kpm", S)):
        if name in masks:
            m = rng.random((N, length)) > 0.6
            m[:, 0] = False
            key = name.replace("kpm", "key_padding_mask")
            mkw[key], tkw[key] = _pair(m, device)
    out = dec(tgt, mem, **mkw)
    tout = tdec(ttgt, tmem, **tkw)
    _close(out, tout, dtype, "output")
    _backward_both(out, tout, rng, dtype, device)
    _close(tgt.grad, ttgt.grad, dtype, "tgt grad")
    _close(mem.grad, tmem.grad, dtype, "memory grad")
    _compare_params_grads(dec, tdec, dtype)


def test_state_dicts_load_into_torch_and_functional_mha_matches():
    rng = _rng(21)
    mod = nn.MultiheadAttention(6, 3, kdim=4, vdim=5, add_bias_kv=True, dtype=mt.float64)
    tmod = torch.nn.MultiheadAttention(6, 3, kdim=4, vdim=5, add_bias_kv=True,
                                       dtype=torch.float64)
    tmod.load_state_dict({k: torch.tensor(v.numpy()) for k, v in mod.state_dict().items()})
    q, k, v = (rng.standard_normal(s) for s in [(3, 2, 6), (4, 2, 4), (4, 2, 5)])
    out, w = F.multi_head_attention_forward(
        mt.tensor(q), mt.tensor(k), mt.tensor(v), 6, 3, None, mod.in_proj_bias, mod.bias_k,
        mod.bias_v, False, 0.0, mod.out_proj.weight, mod.out_proj.bias, training=False,
        use_separate_proj_weight=True, q_proj_weight=mod.q_proj_weight,
        k_proj_weight=mod.k_proj_weight, v_proj_weight=mod.v_proj_weight)
    tout, tw = tmod(torch.tensor(q), torch.tensor(k), torch.tensor(v))
    _close(out, tout, "float64", "output")
    _close(w, tw, "float64", "weights")


def test_transformer_custom_encoder_and_decoder():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 1)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 1)
    model = nn.Transformer(8, 2, custom_encoder=enc, custom_decoder=dec)
    assert model.encoder is enc and model.decoder is dec
    out = model(mt.randn(5, 2, 8), mt.randn(3, 2, 8))
    assert tuple(out.shape) == (3, 2, 8)
