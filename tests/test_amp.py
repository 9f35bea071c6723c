"""Mixed precision against PyTorch: GradScaler over a run with injected infs (same scales,
skipped steps, parameters, state dicts, errors); autocast's dtypes per op, nesting,
enabled=False, decorator use, thread-locality, gradients reaching float32 master weights."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest
from _torch_spread import FLOAT32_EPS, assert_within_spread, torch_elsewhere

import microtorch as mt

torch = pytest.importorskip("torch")


def _models(seed=0):
    rng = np.random.default_rng(seed)
    w1, b1 = rng.standard_normal((4, 3)).astype("float32"), rng.standard_normal(4).astype(
        "float32")
    w2 = rng.standard_normal((1, 4)).astype("float32")
    out = []
    for lib in (mt, torch):
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 1, bias=False))
        with lib.no_grad():
            m[0].weight.copy_(lib.tensor(w1))
            m[0].bias.copy_(lib.tensor(b1))
            m[2].weight.copy_(lib.tensor(w2))
        out.append(m)
    return out


def _run(lib, model, scaler, steps, inf_steps, unscale_first=False, opt_cls="SGD"):
    opt = getattr(lib.optim, opt_cls)(model.parameters(), lr=0.1)
    rng = np.random.default_rng(1)
    record = []
    for step in range(steps):
        x = lib.tensor(rng.standard_normal((5, 3)).astype("float32"))
        loss = (model(x) ** 2).mean()
        if step in inf_steps:
            loss = loss * float("inf") if step % 2 else loss * float("nan")
        opt.zero_grad()
        scaler.scale(loss).backward()
        if unscale_first:
            scaler.unscale_(opt)
        ret = scaler.step(opt)
        scaler.update()
        record.append((scaler.get_scale(), ret, scaler._get_growth_tracker()))
    return record, [p.detach().numpy().copy() for p in model.parameters()], scaler


GRAD_SCALER_KW = dict(init_scale=2.0 ** 10, growth_factor=2.0, backoff_factor=0.25,
                      growth_interval=3)
INF_STEPS = {2, 3, 9}


def _scaled_run(lib, opt_cls: str, unscale_first: bool, steps: int = 14):
    """The GradScaler run of the tests below in ``lib``: (record, parameters, scaler)."""
    model = _models()[lib is torch]
    return _run(lib, model, lib.amp.GradScaler("cpu", **GRAD_SCALER_KW), steps, INF_STEPS,
                unscale_first, opt_cls)


def _torch_parameters(lib, opt_cls: str, unscale_first: bool):
    return _scaled_run(lib, opt_cls, unscale_first)[1]


@pytest.mark.parametrize("unscale_first", [False, True])
@pytest.mark.parametrize("opt_cls", ["SGD", "Adam"])
def test_grad_scaler_run_matches_torch(tmp_path_factory, unscale_first, opt_cls):
    """Scales, skipped steps and state dicts exactly; the parameters after 14 float32 steps
    spread-derived (``_torch_spread``): max(2 x PyTorch's spread over its thread counts and
    SIMD levels, floor), with floor = 14 float32 ulps of each tensor's scale: each step rounds
    every parameter once more, and the forward and backward's own rounding differences are
    relative to the update, small next to the parameter."""
    rec, params, scaler = _scaled_run(mt, opt_cls, unscale_first)
    trec, tparams, tscaler = _scaled_run(torch, opt_cls, unscale_first)
    assert rec == trec
    cases = [dict(opt_cls=o, unscale_first=u) for o in ("SGD", "Adam") for u in (False, True)]
    elsewhere = torch_elsewhere(tmp_path_factory, "test_amp:_torch_parameters", cases)
    case = cases.index(dict(opt_cls=opt_cls, unscale_first=unscale_first))
    for k, (p, tp) in enumerate(zip(params, tparams)):
        assert_within_spread(p, tp, [runs[case][k] for runs in elsewhere.values()],
                             14 * FLOAT32_EPS * float(np.max(np.abs(tp))),
                             err_msg=f"parameter {k}")
    assert scaler.state_dict() == tscaler.state_dict()


def test_grad_scaler_state_dict_round_trip_and_resume():
    model, tmodel = _models()
    kw = dict(init_scale=256.0, growth_interval=2)
    _, _, scaler = _run(mt, model, mt.amp.GradScaler("cpu", **kw), 5, {1})
    _, _, tscaler = _run(torch, tmodel, torch.amp.GradScaler("cpu", **kw), 5, {1})
    sd = scaler.state_dict()
    assert sd == tscaler.state_dict()
    assert list(sd) == list(tscaler.state_dict())
    fresh = mt.amp.GradScaler("cpu")
    fresh.load_state_dict(sd)
    assert fresh.state_dict() == sd and fresh.get_scale() == sd["scale"]
    tfresh = torch.amp.GradScaler("cpu")
    tfresh.load_state_dict(sd)  # the state moves between the two frameworks
    fresh.load_state_dict(tfresh.state_dict())
    assert fresh.state_dict() == tfresh.state_dict()
    with pytest.raises(RuntimeError, match="empty"):
        fresh.load_state_dict({})
    with pytest.raises(KeyError):
        fresh.load_state_dict({"scale": 1.0})
    assert fresh.state_dict() == sd  # a failed load changes nothing


def test_grad_scaler_scales_nested_outputs_and_new_scale():
    scaler = mt.amp.GradScaler("cpu", init_scale=4.0)
    a, b = mt.tensor([1.0, 2.0]), mt.tensor(3.0)
    out = scaler.scale([a, (b, [a])])
    assert isinstance(out, list) and isinstance(out[1], tuple)
    np.testing.assert_array_equal(out[1][1][0].numpy(), [4.0, 8.0])
    assert out[1][0].item() == 12.0
    with pytest.raises(ValueError, match="outputs must be a Tensor"):
        scaler.scale([a, 3])
    opt = mt.optim.SGD([mt.zeros(2, requires_grad=True)], lr=0.1)
    opt.param_groups[0]["params"][0].grad = mt.ones(2)
    scaler.step(opt)
    scaler.update(8.0)
    assert scaler.get_scale() == 8.0
    scaler.step(opt)
    scaler.update(mt.tensor(16.0))
    assert scaler.get_scale() == 16.0
    scaler.step(opt)
    with pytest.raises(AssertionError, match="new_scale should be"):
        scaler.update(mt.tensor([1.0, 2.0]))


def _errors(lib, action):
    scaler = lib.amp.GradScaler("cpu")
    p = lib.zeros(2, requires_grad=True)
    opt = lib.optim.SGD([p], lr=0.1)
    with pytest.raises(Exception) as info:
        action(lib, scaler, opt, p)
    return info.type.__name__, str(info.value)


@pytest.mark.parametrize("action", [
    lambda lib, s, o, p: s.unscale_(o),
    lambda lib, s, o, p: s.step(o),
    lambda lib, s, o, p: s.update(),
    lambda lib, s, o, p: (s.scale(p.sum()).backward(), s.unscale_(o), s.unscale_(o)),
    lambda lib, s, o, p: (s.scale(p.sum()).backward(), s.step(o), s.unscale_(o)),
    lambda lib, s, o, p: (s.scale(p.sum()).backward(), s.step(o), s.step(o)),
    lambda lib, s, o, p: (s.scale(p.sum()).backward(), s.step(o, closure=None)),
    lambda lib, s, o, p: lib.amp.GradScaler("cpu", growth_factor=1.0),
    lambda lib, s, o, p: lib.amp.GradScaler("cpu", backoff_factor=1.0),
], ids=lambda f: "")
def test_grad_scaler_errors_match_torch(action):
    assert _errors(mt, action) == _errors(torch, action)


def test_grad_scaler_disabled_and_cuda_alias():
    scaler = mt.amp.GradScaler("cpu", enabled=False)
    t = mt.tensor(2.0)
    assert scaler.scale(t) is t and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    assert not scaler.is_enabled()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = mt.cuda.amp.GradScaler()
        mt.cpu.amp.GradScaler()
    messages = [(w.category, str(w.message)) for w in caught]
    assert (FutureWarning, "`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
            "`torch.amp.GradScaler('cuda', args...)` instead.") in messages
    assert (FutureWarning, "`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
            "`torch.amp.GradScaler('cpu', args...)` instead.") in messages
    assert isinstance(old, mt.amp.GradScaler)
    assert old.is_enabled() == mt.cuda.is_available()


def test_grad_scaler_refuses_float16_grads_and_unscales_16_bit_in_float32():
    errors = []
    for lib in (mt, torch):
        p = lib.zeros(3, dtype=lib.float16, requires_grad=True)
        p.grad = lib.tensor(np.array([1e-3, 3.0, 1.0], dtype=np.float16))
        scaler = lib.amp.GradScaler("cpu", init_scale=1024.0)
        scaler.scale(lib.tensor(1.0))
        with pytest.raises(ValueError) as info:
            scaler.unscale_(lib.optim.SGD([p], lr=1.0))
        errors.append(str(info.value))
        assert p.dtype == lib.float16  # the model's weights stay as the user made them
    assert errors[0] == errors[1] == "Attempting to unscale FP16 gradients."
    if not hasattr(mt, "bfloat16"):
        return
    grads = []
    for lib in (mt, torch):
        p = lib.zeros(3, dtype=lib.bfloat16, requires_grad=True)
        p.grad = lib.tensor([3.0, 7.0, 1e30]).to(lib.bfloat16)
        scaler = lib.amp.GradScaler("cpu", init_scale=3.0)
        scaler.scale(lib.tensor(1.0))
        opt = lib.optim.SGD([p], lr=1.0)
        scaler.unscale_(opt)
        grads.append(p.grad.float().numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_autocast_op_dtypes_match_torch(low):
    if not hasattr(mt, low):
        pytest.skip(f"microtorch has no {low} yet")
    rng = np.random.default_rng(0)
    x32 = rng.standard_normal((4, 4)).astype("float32")
    w32 = rng.standard_normal((4, 4)).astype("float32")
    b32 = rng.standard_normal(4).astype("float32")
    ops = {
        "matmul": lambda L, x, w, b: x @ w, "mm": lambda L, x, w, b: L.mm(x, w),
        "bmm": lambda L, x, w, b: L.bmm(x[None], w[None]),
        "addmm": lambda L, x, w, b: L.addmm(b, x, w),
        "baddbmm": lambda L, x, w, b: L.baddbmm(x[None], x[None], w[None]),
        "einsum": lambda L, x, w, b: L.einsum("ij,jk->ik", x, w),
        "mv": lambda L, x, w, b: L.mv(x, b), "add": lambda L, x, w, b: x + w,
        "trace": lambda L, x, w, b: L.trace(x), "exp": lambda L, x, w, b: x.exp(),
        "float64": lambda L, x, w, b: x.double() @ w.double(),
        "cat": lambda L, x, w, b: L.cat([x, w.float()]),
        "stack": lambda L, x, w, b: L.stack([x, w.float()]),
        "sum": lambda L, x, w, b: x.sum(), "prod": lambda L, x, w, b: L.prod(x),
        "cumsum": lambda L, x, w, b: L.cumsum(x, 0), "pow": lambda L, x, w, b: x ** 2,
        "logsumexp": lambda L, x, w, b: L.logsumexp(x, 0), "log": lambda L, x, w, b: x.log(),
        "atan2": lambda L, x, w, b: L.atan2(x, w.float()), "erfinv": lambda L, x, w, b:
        (x * 0.1).erfinv(),
    }
    for name, fn in ops.items():
        for dt in ("float32", low):
            results = []
            for L in (mt, torch):
                x, w, b = (L.tensor(a).to(getattr(L, dt)) for a in (x32, w32, b32))
                if name == "add" and dt != "float32":  # mixed dtypes: promotion
                    w, b = w.float(), b.float()
                with L.autocast("cpu", dtype=getattr(L, low)):
                    try:
                        results.append(str(fn(L, x, w, b).dtype).split(".")[-1])
                    except RuntimeError:
                        results.append("error")
            assert results[0] == results[1], (name, dt, results)


def test_autocast_values_and_master_weight_gradients_match_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype("float32")
    w = rng.standard_normal((4, 2)).astype("float32")
    outs = []
    for L in (mt, torch):
        xt, wt = L.tensor(x), L.tensor(w, requires_grad=True)
        with L.autocast("cpu", dtype=L.float16):
            y = xt @ wt
            loss = (y.float() ** 2).sum()
        loss.backward()
        assert wt.dtype == L.float32 and wt.grad.dtype == L.float32
        outs.append((y.detach().float().numpy(), wt.grad.numpy()))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-3)


def test_autocast_nesting_disable_decorator_and_state():
    x, w = mt.randn(2, 3), mt.randn(3, 2)
    assert not mt.is_autocast_enabled("cpu")
    with mt.autocast("cpu", dtype=mt.float16):
        assert (x @ w).dtype == mt.float16
        with mt.autocast("cpu", enabled=False):
            assert (x @ w).dtype == mt.float32
            assert not mt.is_autocast_enabled("cpu")
        assert mt.is_autocast_enabled("cpu")
        assert mt.get_autocast_dtype("cpu") == mt.float16
        with mt.autocast("cpu", dtype=mt.float16):
            assert (x @ w).dtype == mt.float16
        assert (x @ w).dtype == mt.float16
    assert not mt.is_autocast_enabled("cpu")
    assert (x @ w).dtype == mt.float32

    @mt.autocast("cpu", dtype=mt.float16)
    def forward(a, b):
        return a @ b

    assert forward(x, w).dtype == mt.float16
    assert (x @ w).dtype == mt.float32
    # a region that raises still restores the state
    with pytest.raises(KeyError):
        with mt.autocast("cpu", dtype=mt.float16):
            raise KeyError("inside")
    assert not mt.is_autocast_enabled("cpu")


def test_autocast_is_thread_local():
    x, w = mt.randn(2, 3), mt.randn(3, 2)
    seen = []
    with mt.autocast("cpu", dtype=mt.float16):
        thread = threading.Thread(target=lambda: seen.append((x @ w).dtype))
        thread.start()
        thread.join()
        assert (x @ w).dtype == mt.float16
    assert seen == [mt.float32]


def test_autocast_arguments_match_torch():
    for L in (mt, torch):
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            L.autocast(L.device("cpu"))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            region = L.autocast("cpu", dtype=L.float32)
        assert "In CPU autocast, but the target dtype is not supported" in str(caught[0].message)
        with region:
            assert not L.is_autocast_enabled("cpu")
    with pytest.raises(RuntimeError, match="unsupported autocast device_type"):
        mt.autocast("tpu")
    assert mt.get_autocast_dtype("cuda") == mt.float16
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mt.cpu.amp.autocast(dtype=mt.float16)
        mt.cuda.amp.autocast()
    texts = [str(w.message) for w in caught]
    assert ("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
            "`torch.amp.autocast('cpu', args...)` instead.") in texts
    assert ("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
            "`torch.amp.autocast('cuda', args...)` instead.") in texts


def test_autocast_caches_weight_casts_within_a_region():
    w = mt.randn(3, 3, requires_grad=True)
    x = mt.randn(2, 3)
    with mt.autocast("cpu", dtype=mt.float16):
        a = x @ w
        b = x @ w
        assert a.grad_fn._next[1] is b.grad_fn._next[1]  # one cast node, reused
    with mt.autocast("cpu", dtype=mt.float16, cache_enabled=False):
        a = x @ w
        b = x @ w
        assert a.grad_fn._next[1] is not b.grad_fn._next[1]


def test_autocast_follows_the_device_types_list(device):
    # PyTorch's lists differ by device type: exp, sum and log_softmax-like ops go to float32
    # under CUDA autocast but keep their dtype under CPU autocast; matmul is low on both.
    x = mt.randn(4, 4, device=device)
    with mt.autocast(device, dtype=mt.float16):
        h = x @ x
        assert h.dtype == mt.float16
        wide = mt.float32 if device == "cuda" else mt.float16
        assert h.exp().dtype == wide and h.sum().dtype == wide and (h ** 2).dtype == wide
        assert mt.mv(h, x[0].half()).dtype == mt.float16
        assert mt.cat([h, x]).dtype == mt.float32
    other = "cpu" if device == "cuda" else "cuda"
    if other == "cpu" or mt.cuda.is_available():
        with mt.autocast(other, dtype=mt.float16):  # the other device type's region: no cast
            assert (x @ x).dtype == mt.float32


def test_grad_scaler_on_every_device(device):
    p = mt.ones(3, device=device, requires_grad=True)
    opt = mt.optim.SGD([p], lr=0.5)
    scaler = mt.amp.GradScaler(device, init_scale=8.0, growth_interval=1)
    scaler.scale((p * 2).sum()).backward()
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(p.detach().cpu().numpy(), [0.0, 0.0, 0.0])
    assert scaler.get_scale() == 16.0
    opt.zero_grad()
    scaler.scale((p * float("inf")).sum()).backward()
    assert scaler.step(opt) is None
    scaler.update()
    assert scaler.get_scale() == 8.0


def test_custom_fwd_casts_inputs_and_custom_bwd_restores_the_state():
    class Ctx:
        pass

    seen = {}

    @mt.amp.custom_fwd(device_type="cpu", cast_inputs=mt.float32)
    def forward(ctx, x, scale):
        seen["fwd"] = (x.dtype, mt.is_autocast_enabled("cpu"))
        return x * scale

    @mt.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        seen["bwd"] = mt.is_autocast_enabled("cpu")
        return grad

    ctx = Ctx()
    with mt.autocast("cpu", dtype=mt.float16):
        forward(ctx, mt.ones(2, dtype=mt.float16), 2.0)
    assert seen["fwd"] == (mt.float32, False)
    backward(ctx, mt.ones(2))
    assert seen["bwd"] is False  # cast_inputs ran forward outside autocast

    @mt.amp.custom_fwd(device_type="cpu")
    def forward_plain(ctx, x):
        return x @ x

    ctx = Ctx()
    with mt.autocast("cpu", dtype=mt.float16):
        assert forward_plain(ctx, mt.ones(2, 2)).dtype == mt.float16
    backward(ctx, mt.ones(2))
    assert seen["bwd"] is True and ctx._dtype == mt.float16
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        mt.amp.custom_fwd(device_type=mt.device("cpu"))


_X = np.random.default_rng(5).standard_normal((4, 6)).astype("float32")
_W = np.random.default_rng(6).standard_normal((3, 6)).astype("float32")
_IMG = np.random.default_rng(7).standard_normal((1, 2, 6, 6)).astype("float32")
_K = np.random.default_rng(8).standard_normal((3, 2, 3, 3)).astype("float32")
_T = np.array([0, 1, 2, 1])
NN_OPS = {
    "linear": lambda L, F, a: F.linear(a, L.tensor(_W), L.tensor(_W[:, 0])),
    "conv2d": lambda L, F, a: F.conv2d(L.tensor(_IMG).to(a.dtype), L.tensor(_K)),
    "conv1d": lambda L, F, a: F.conv1d(L.tensor(_IMG[0]).to(a.dtype), L.tensor(_K[:, :, 0])),
    "conv_transpose2d": lambda L, F, a: F.conv_transpose2d(L.tensor(_IMG).to(a.dtype),
                                                           L.tensor(_K).transpose(0, 1)),
    "softmax": lambda L, F, a: F.softmax(a, -1),
    "log_softmax": lambda L, F, a: F.log_softmax(a, -1),
    "cross_entropy": lambda L, F, a: F.cross_entropy(a[:, :3], L.tensor(_T)),
    "nll_loss": lambda L, F, a: F.nll_loss(a[:, :3], L.tensor(_T)),
    "mse_loss": lambda L, F, a: F.mse_loss(a, a.detach() * 0.5),
    "bce_with_logits": lambda L, F, a: F.binary_cross_entropy_with_logits(
        a, (a.detach() > 0).to(a.dtype)),
    "bce": lambda L, F, a: F.binary_cross_entropy(a.sigmoid(), (a.detach() > 0).to(a.dtype)),
    "l1_loss": lambda L, F, a: F.l1_loss(a, a.detach() * 0.3),
    "huber_loss": lambda L, F, a: F.huber_loss(a, a.detach() * 0.3),
    "kl_div": lambda L, F, a: F.kl_div(a, a.detach().exp() * 0.1, reduction="batchmean"),
    "layer_norm": lambda L, F, a: F.layer_norm(a, (6,)),
    "group_norm": lambda L, F, a: F.group_norm(a, 2),
    "softplus": lambda L, F, a: F.softplus(a),
    "prelu": lambda L, F, a: F.prelu(a, L.tensor([0.25])),
    "sdpa": lambda L, F, a: F.scaled_dot_product_attention(a[None], a[None], a[None]),
    "cosine_similarity": lambda L, F, a: F.cosine_similarity(a, a * 2),
    "cdist": lambda L, F, a: L.cdist(a, a),
    "pad_reflect": lambda L, F, a: F.pad(a[None], (1, 1), mode="reflect"),
    "pad_replicate": lambda L, F, a: F.pad(a[None, None], (1, 1, 2, 0), mode="replicate"),
    "pad_circular": lambda L, F, a: F.pad(a[None], (1, 1), mode="circular"),
    "pad_constant": lambda L, F, a: F.pad(a, (1, 1)),
}


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", list(NN_OPS))
def test_autocast_nn_ops_match_torch(name, low):
    fn = NN_OPS[name]
    results = []
    for L in (mt, torch):
        row = []
        for dt in ("float32", low):
            a = L.tensor(_X).to(getattr(L, dt))
            with L.autocast("cpu", dtype=getattr(L, low)):
                try:
                    out = fn(L, L.nn.functional, a)
                except RuntimeError:
                    row.append(("error",))
                    continue
            row.append((str(out.dtype).split(".")[-1], out.detach().float().numpy()))
        results.append(row)
    for mine, theirs in zip(*results):
        assert mine[0] == theirs[0], name
        if len(mine) > 1:
            tol = 2e-2 if low == "float16" else 8e-2  # bfloat16 keeps 8 bits of mantissa
            np.testing.assert_allclose(mine[1], theirs[1], rtol=tol, atol=tol, err_msg=name)


def test_autocast_cuda_list(device):
    if device != "cuda":
        pytest.skip("the CUDA list needs a GPU")
    F = mt.nn.functional
    x = mt.randn(4, 6, device=device)
    with mt.autocast("cuda"):
        h = F.linear(x, mt.randn(6, 6, device=device))
        assert h.dtype == mt.float16
        assert F.softmax(h, -1).dtype == mt.float32
        assert F.softmax(h, -1, dtype=mt.float16).dtype == mt.float16
        assert F.layer_norm(h, (6,)).dtype == mt.float32
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(h.sigmoid(), h.detach().sigmoid())


def test_deprecated_autocast_spellings_warn_as_torch():
    for L in (mt, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert L.get_autocast_gpu_dtype() == L.float16
            assert L.is_autocast_cpu_enabled() is False
            L.set_autocast_cpu_enabled(False)
            L.set_autocast_gpu_dtype(L.float16)
        texts = [str(w.message).split(" (Triggered")[0] for w in caught]
        assert all(w.category is DeprecationWarning for w in caught)
        if L is mt:
            mine = texts
        else:
            assert mine == texts


def test_bfloat16_is_the_cpu_default_and_matches_torch():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 8)).astype("float32")
    outs = []
    for L in (mt, torch):
        L.manual_seed(0)
        lin = L.nn.Linear(8, 4)
        with L.autocast("cpu"):
            assert L.get_autocast_dtype("cpu") == L.bfloat16
            y = lin(L.tensor(x))
            loss = L.nn.functional.mse_loss(y, L.zeros(5, 4))
        assert y.dtype == L.bfloat16 and loss.dtype == L.float32
        loss.backward()
        assert lin.weight.dtype == L.float32 and lin.weight.grad.dtype == L.float32
        outs.append((y.float().detach().numpy(), lin.weight.grad.numpy()))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=2e-2, atol=1e-2)
