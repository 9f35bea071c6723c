"""``microtorch.utils.flop_counter.FlopCounterMode`` against PyTorch's: the counts per module and
op (forward and backward) of the same models, products, convolutions and attention, the printed
table, ``custom_mapping`` and ``register_flop_formula``. FLOP counts depend on shapes only: each
case builds its model in both libraries from the same code and compares the counts."""

from __future__ import annotations

import contextlib
import io

import pytest

import microtorch as mt
from microtorch.utils import flop_counter as mt_fc
from microtorch.utils.flop_counter import FlopCounterMode

torch = pytest.importorskip("torch")
torch_fc = pytest.importorskip("torch.utils.flop_counter")
pytestmark = pytest.mark.torch


def _counter(lib):
    return FlopCounterMode if lib is mt else torch_fc.FlopCounterMode


def _counts(lib, fn, **kwargs) -> tuple[dict, int]:
    """({module: {op name: flops}}, total) of ``fn(lib)`` run in the library's counter."""
    with _counter(lib)(display=False, **kwargs) as counter:
        fn(lib)
    counts = {mod: {str(op): n for op, n in ops.items()}
              for mod, ops in counter.get_flop_counts().items()}
    return counts, counter.get_total_flops()


def _same(fn, **kwargs) -> dict:
    mine, theirs = _counts(mt, fn, **kwargs), _counts(torch, fn, **kwargs)
    assert mine == theirs
    return mine[0]


def _rand(lib, *shape, grad=False):
    return lib.randn(*shape, requires_grad=grad)


# -- models --------------------------------------------------------------------------------------
def _mlp(lib):
    nn = lib.nn

    class MyModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.act = nn.ReLU()
            self.fc2 = nn.Linear(16, 4)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    return MyModel()


def _nested(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 6, bias=False))
            self.proj = nn.Linear(6, 6)

        def forward(self, x):
            return self.proj(self.inner(x)) + x

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block1 = Block()
            self.block2 = Block()
            self.head = nn.Linear(6, 2)

        def forward(self, x):
            h = self.block2(self.block1(x))
            return self.head(h) + (x @ lib.ones(6, 2))  # a product outside every submodule

    return Net()


def _convnet(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 4, 3, stride=2, groups=2, bias=False), nn.ReLU(),
                         nn.Flatten(), nn.Linear(4, 5))


def test_mlp_forward_backward():
    counts = _same(lambda lib: _mlp(lib)(_rand(lib, 3, 8)).sum().backward())
    assert set(counts) == {"Global", "MyModel", "MyModel.fc1", "MyModel.fc2"}
    assert counts["MyModel.fc1"] == {"aten.addmm": 768, "aten.mm": 768}


def test_mlp_forward_only_and_no_grad():
    _same(lambda lib: _mlp(lib)(_rand(lib, 3, 8)))

    def no_grad(lib):
        with lib.no_grad():
            _mlp(lib)(_rand(lib, 5, 8))

    _same(no_grad)


def test_input_requiring_grad_and_3d_input():
    _same(lambda lib: _mlp(lib)(_rand(lib, 2, 3, 8, grad=True)).sum().backward())


def test_nested_modules():
    counts = _same(lambda lib: _nested(lib)(_rand(lib, 4, 6, grad=True)).sum().backward())
    assert "Net.block1.inner.0" in counts and "Net.head" in counts


def test_convnet_forward_backward():
    counts = _same(lambda lib: _convnet(lib)(_rand(lib, 2, 3, 8, 8)).sum().backward())
    assert counts["Sequential.0"]["aten.convolution_backward"] > 0


@pytest.mark.parametrize("make, shape", [
    (lambda nn: nn.Conv1d(3, 4, 3), (2, 3, 10)),
    (lambda nn: nn.Conv2d(3, 4, 3, stride=2, padding=1), (2, 3, 9, 9)),
    (lambda nn: nn.Conv2d(4, 6, 3, groups=2, dilation=2), (2, 4, 9, 9)),
    (lambda nn: nn.Conv2d(3, 4, 3, bias=False, padding="same"), (3, 8, 8)),
    (lambda nn: nn.Conv3d(2, 3, 2, padding=1, stride=(2, 1, 1)), (1, 2, 4, 4, 4)),
    (lambda nn: nn.ConvTranspose1d(3, 4, 3, stride=2), (2, 3, 5)),
    (lambda nn: nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2, output_padding=1), (2, 4, 5, 5)),
    (lambda nn: nn.ConvTranspose3d(2, 3, 2, stride=2, padding=1), (1, 2, 3, 3, 3)),
])
@pytest.mark.parametrize("x_grad", [False, True])
def test_convolutions(make, shape, x_grad):
    counts = _same(lambda lib: make(lib.nn)(_rand(lib, *shape, grad=x_grad)).sum().backward())
    assert counts["Global"]["aten.convolution"] > 0


def test_convolution_weight_frozen():
    def run(lib):
        conv = lib.nn.Conv2d(3, 4, 3)
        conv.weight.requires_grad_(False)
        conv(_rand(lib, 2, 3, 6, 6, grad=True)).sum().backward()

    _same(run)


# -- products ----------------------------------------------------------------------------------
_PRODUCTS = {
    "mm": lambda lib, g: lib.mm(_rand(lib, 4, 5, grad=g), _rand(lib, 5, 6, grad=g)),
    "addmm": lambda lib, g: lib.addmm(_rand(lib, 5, grad=g), _rand(lib, 3, 4, grad=g),
                                      _rand(lib, 4, 5, grad=g)),
    "bmm": lambda lib, g: lib.bmm(_rand(lib, 2, 3, 4, grad=g), _rand(lib, 2, 4, 5, grad=g)),
    "baddbmm": lambda lib, g: lib.baddbmm(_rand(lib, 2, 3, 5, grad=g),
                                          _rand(lib, 2, 3, 4, grad=g), _rand(lib, 2, 4, 5)),
    "addbmm": lambda lib, g: lib.addbmm(_rand(lib, 3, 5), _rand(lib, 2, 3, 4, grad=g),
                                        _rand(lib, 2, 4, 5, grad=g)),
    "mv": lambda lib, g: lib.mv(_rand(lib, 4, 5, grad=g), _rand(lib, 5, grad=g)),
    "dot": lambda lib, g: lib.dot(_rand(lib, 5, grad=g), _rand(lib, 5, grad=g)),
    "addmv": lambda lib, g: lib.addmv(_rand(lib, 3), _rand(lib, 3, 4, grad=g), _rand(lib, 4)),
    "1d@2d": lambda lib, g: _rand(lib, 4, grad=g) @ _rand(lib, 4, 5, grad=g),
    "2d@1d": lambda lib, g: _rand(lib, 3, 4, grad=g) @ _rand(lib, 4, grad=g),
    "1d@3d": lambda lib, g: _rand(lib, 4, grad=g) @ _rand(lib, 2, 4, 5, grad=g),
    "3d@1d": lambda lib, g: _rand(lib, 2, 3, 4, grad=g) @ _rand(lib, 4),
    "3d@2d": lambda lib, g: _rand(lib, 2, 3, 4) @ _rand(lib, 4, 5, grad=g),
    "3dT@2d": lambda lib, g: _rand(lib, 3, 2, 4).transpose(0, 1) @ _rand(lib, 4, 5, grad=g),
    "3dT@2d-a": lambda lib, g: _rand(lib, 3, 2, 4, grad=g).transpose(0, 1) @ _rand(lib, 4, 5),
    "2d@3d": lambda lib, g: _rand(lib, 3, 4, grad=g) @ _rand(lib, 2, 4, 5),
    "2d@3d-b": lambda lib, g: _rand(lib, 3, 4) @ _rand(lib, 2, 4, 5, grad=g),
    "2d@4d": lambda lib, g: _rand(lib, 3, 4, grad=g) @ _rand(lib, 2, 2, 4, 5, grad=g),
    "4d@2d": lambda lib, g: _rand(lib, 2, 2, 3, 4, grad=g) @ _rand(lib, 4, 5),
    "3d@3d": lambda lib, g: _rand(lib, 2, 3, 4, grad=g) @ _rand(lib, 2, 4, 5, grad=g),
    "4d@3d": lambda lib, g: _rand(lib, 2, 2, 3, 4, grad=g) @ _rand(lib, 2, 4, 5),
    "1x3d@3d": lambda lib, g: _rand(lib, 1, 3, 4, grad=g) @ _rand(lib, 2, 4, 5),
    "3d@1x3d": lambda lib, g: _rand(lib, 2, 3, 4) @ _rand(lib, 1, 4, 5, grad=g),
    "1x3d@1x3d": lambda lib, g: _rand(lib, 1, 3, 4, grad=g) @ _rand(lib, 1, 4, 5),
    "einsum-bmm": lambda lib, g: lib.einsum("bij,bjk->bik", _rand(lib, 2, 3, 4, grad=g),
                                            _rand(lib, 2, 4, 5)),
    "einsum-dot": lambda lib, g: lib.einsum("i,i->", _rand(lib, 4, grad=g), _rand(lib, 4)),
    "einsum-rows": lambda lib, g: lib.einsum("ij,ij->i", _rand(lib, 3, 4, grad=g),
                                             _rand(lib, 3, 4, grad=g)),
    "einsum-outer": lambda lib, g: lib.einsum("i,j->ij", _rand(lib, 3, grad=g), _rand(lib, 4)),
    "einsum-sum": lambda lib, g: lib.einsum("ijk,jl->il", _rand(lib, 2, 3, 4, grad=g),
                                            _rand(lib, 3, 5, grad=g)),
    "einsum-3": lambda lib, g: lib.einsum("ij,jk,kl->il", _rand(lib, 2, 3),
                                          _rand(lib, 3, 4, grad=g), _rand(lib, 4, 5, grad=g)),
}


@pytest.mark.parametrize("name", sorted(_PRODUCTS))
@pytest.mark.parametrize("grad", [False, True])
def test_products(name, grad):
    def run(lib):
        out = _PRODUCTS[name](lib, grad)
        if out.requires_grad:
            out.sum().backward()

    _same(run)


@pytest.mark.parametrize("shape, bias", [((4,), True), ((4,), False), ((3, 4), True),
                                         ((3, 4), False), ((2, 3, 4), True),
                                         ((2, 3, 4), False), ((2, 2, 3, 4), True)])
@pytest.mark.parametrize("x_grad", [False, True])
def test_linear(shape, bias, x_grad):
    _same(lambda lib: lib.nn.Linear(4, 5, bias=bias)(_rand(lib, *shape, grad=x_grad))
          .sum().backward())


@pytest.mark.parametrize("weight_grad", [False, True])
def test_linear_non_contiguous_input(weight_grad):
    def run(lib):
        layer = lib.nn.Linear(4, 5)
        layer.weight.requires_grad_(weight_grad)
        layer(_rand(lib, 3, 2, 4, grad=True).transpose(0, 1)).sum().backward()

    _same(run)


_OTHER_OPS = {
    "bilinear": lambda L: L.nn.Bilinear(3, 4, 5)(_rand(L, 2, 3, grad=True), _rand(L, 2, 4)),
    "lstm": lambda L: L.nn.LSTM(4, 6, num_layers=2)(_rand(L, 5, 3, 4, grad=True))[0],
    "tensordot": lambda L: L.tensordot(_rand(L, 2, 3, 4, grad=True), _rand(L, 3, 4, 5), dims=2),
    "inner": lambda L: L.inner(_rand(L, 3, 4, grad=True), _rand(L, 5, 4, grad=True)),
    "outer": lambda L: L.outer(_rand(L, 3, grad=True), _rand(L, 4)),
    "multi_dot": lambda L: L.linalg.multi_dot([_rand(L, 2, 3, grad=True), _rand(L, 3, 4),
                                               _rand(L, 4, 5, grad=True)]),
    "cdist": lambda L: L.cdist(_rand(L, 3, 4, grad=True), _rand(L, 5, 4)),
    "conv2d": lambda L: L.nn.functional.conv2d(_rand(L, 1, 2, 5, 5), _rand(L, 3, 2, 3, 3,
                                                                            grad=True)),
    "vecdot": lambda L: L.linalg.vecdot(_rand(L, 3, 4, grad=True), _rand(L, 3, 4)),
    "methods": lambda L: _rand(L, 2, 3, grad=True).mm(_rand(L, 3, 4)).matmul(_rand(L, 4, 2)),
    "interpolate": lambda L: L.nn.functional.interpolate(_rand(L, 1, 2, 4, 4, grad=True),
                                                         scale_factor=2, mode="bilinear"),
}


@pytest.mark.parametrize("name", sorted(_OTHER_OPS))
def test_other_ops(name):
    _same(lambda lib: _OTHER_OPS[name](lib).sum().backward())


# -- attention -----------------------------------------------------------------------------------
_SDPA = {
    "math": dict(q=(2, 3, 5, 4), k=(2, 3, 6, 4), v=(2, 3, 6, 7)),
    "flash": dict(q=(2, 3, 5, 4), k=(2, 3, 6, 4), v=(2, 3, 6, 4)),
    "causal": dict(q=(2, 3, 5, 4), k=(2, 3, 5, 4), v=(2, 3, 5, 7), is_causal=True),
    "flash-causal": dict(q=(2, 3, 5, 4), k=(2, 3, 5, 4), v=(2, 3, 5, 4), is_causal=True),
    "dropout": dict(q=(2, 3, 5, 4), k=(2, 3, 6, 4), v=(2, 3, 6, 4), dropout_p=0.5),
    "3d": dict(q=(3, 5, 4), k=(3, 6, 4), v=(3, 6, 4)),
    "5d": dict(q=(2, 2, 3, 5, 4), k=(2, 2, 3, 6, 4), v=(2, 2, 3, 6, 4)),
    "2d": dict(q=(5, 4), k=(6, 4), v=(6, 4)),
    "gqa-math": dict(q=(2, 4, 5, 4), k=(2, 2, 6, 4), v=(2, 2, 6, 7), enable_gqa=True),
    "gqa-flash": dict(q=(2, 4, 5, 4), k=(2, 2, 6, 4), v=(2, 2, 6, 4), enable_gqa=True),
    "mask": dict(q=(2, 3, 5, 4), k=(2, 3, 6, 4), v=(2, 3, 6, 7), mask=True),
    "flash-mask": dict(q=(2, 3, 5, 4), k=(2, 3, 6, 4), v=(2, 3, 6, 4), mask=True),
}


@pytest.mark.parametrize("name", sorted(_SDPA))
@pytest.mark.parametrize("grads", [(False, False, False), (True, False, False),
                                   (True, True, True)])
def test_scaled_dot_product_attention(name, grads):
    def run(lib):
        spec = dict(_SDPA[name])
        shapes = [spec.pop(n) for n in "qkv"]
        q, k, v = (_rand(lib, *s, grad=g) for s, g in zip(shapes, grads))
        if spec.pop("mask", False):
            spec["attn_mask"] = lib.ones(shapes[0][-2], shapes[1][-2], dtype=lib.bool).tril()
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, **spec)
        if out.requires_grad:
            out.sum().backward()

    _same(run)


@pytest.mark.parametrize("kwargs", [{}, {"need_weights": False}, {"mask": True},
                                    {"mask": True, "need_weights": False},
                                    {"key_padding": True}])
def test_multihead_attention(kwargs):
    def run(lib):
        lib.manual_seed(0)
        mha = lib.nn.MultiheadAttention(8, 2)
        x = _rand(lib, 5, 3, 8)
        extra = {k: v for k, v in kwargs.items() if k == "need_weights"}
        if kwargs.get("mask"):
            extra["attn_mask"] = lib.ones(5, 5, dtype=lib.bool).triu(1)
        if kwargs.get("key_padding"):
            extra["key_padding_mask"] = lib.zeros(3, 5, dtype=lib.bool)
        mha(x, x, x, **extra)[0].sum().backward()

    _same(run)


def test_multihead_attention_cross_and_separate_weights():
    def cross(lib):
        mha = lib.nn.MultiheadAttention(8, 2)
        kv = _rand(lib, 6, 3, 8)
        mha(_rand(lib, 5, 3, 8), kv, kv)[0].sum().backward()

    def separate(lib):
        mha = lib.nn.MultiheadAttention(8, 2, batch_first=True, kdim=4, vdim=6)
        mha(_rand(lib, 3, 5, 8), _rand(lib, 3, 6, 4), _rand(lib, 3, 6, 6))[0].sum().backward()

    _same(cross)
    _same(separate)


@pytest.mark.parametrize("norm_first, batch_first", [(False, False), (True, True)])
def test_transformer_encoder_layer(norm_first, batch_first):
    def run(lib):
        layer = lib.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                               norm_first=norm_first, batch_first=batch_first)
        layer(_rand(lib, 3, 5, 8)).sum().backward()

    counts = _same(run)
    assert "TransformerEncoderLayer.linear1" in counts


def test_transformer_encoder_layer_eval():
    def run(lib):
        layer = lib.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16).eval()
        with lib.no_grad():
            layer(_rand(lib, 5, 3, 8))

    _same(run)


# -- the table, the API ------------------------------------------------------------------------
def _printed(lib, fn, **kwargs) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        with _counter(lib)(**kwargs) as counter:
            fn(lib)
    return buf.getvalue(), counter


@pytest.mark.parametrize("depth", [1, 2, 3, None])
def test_printed_table(depth):
    pytest.importorskip("tabulate")  # (PyTorch's get_table needs it)

    def run(lib):
        _nested(lib)(_rand(lib, 4, 6, grad=True)).sum().backward()

    mine, mine_counter = _printed(mt, run, depth=depth)
    theirs, theirs_counter = _printed(torch, run, depth=depth)
    assert mine == theirs
    for d in (0, 1, 2, 5):
        assert mine_counter.get_table(d) == theirs_counter.get_table(d)


def test_table_without_tabulate(monkeypatch):
    """microtorch's own layout (no tabulate): tabulate 0.10's output, checked by value."""
    import sys

    monkeypatch.setitem(sys.modules, "tabulate", None)
    with FlopCounterMode(display=False) as counter:
        _mlp(mt)(_rand(mt, 3, 8)).sum().backward()
    assert counter.get_table() == "\n".join([
        "Module          FLOP    % Total",
        "------------  ------  ---------",
        "MyModel         2688    100.00%",
        "- aten.addmm    1152     42.86%",
        "- aten.mm       1536     57.14%",
        "MyModel.fc1     1536     57.14%",
        "- aten.addmm     768     28.57%",
        "- aten.mm        768     28.57%",
        "MyModel.fc2     1152     42.86%",
        "- aten.addmm     384     14.29%",
        "- aten.mm        768     28.57%"])
    with FlopCounterMode(display=False) as empty:
        mt.ones(3) + 1
    assert empty.get_table() == "Module      FLOP    % Total\n--------  ------  ---------\n" \
        "Global         0         0%"
    with FlopCounterMode(display=False) as big:
        mt.ones(300, 400) @ mt.ones(400, 500)
    assert big.get_table().splitlines()[2:] == ["Global     120.000M    100.00%",
                                                "- aten.mm  120.000M    100.00%"]


def test_global_section_when_flops_outside_modules():
    pytest.importorskip("tabulate")

    def run(lib):
        _mlp(lib)(_rand(lib, 3, 8))
        lib.mm(_rand(lib, 3, 3), _rand(lib, 3, 3))

    assert _printed(mt, run)[0] == _printed(torch, run)[0]


def test_empty_and_reuse():
    for lib in (mt, torch):
        with _counter(lib)(display=False) as counter:
            pass
        assert counter.get_flop_counts() == {}
        assert counter.get_total_flops() == 0
    counter = FlopCounterMode(display=False)
    with counter:
        mt.mm(mt.ones(2, 3), mt.ones(3, 4))
    with counter:  # entering again starts from zero
        mt.mm(mt.ones(2, 3), mt.ones(3, 4))
    assert counter.get_total_flops() == 48


def test_nested_counters_both_count():
    for lib in (mt, torch):
        with _counter(lib)(display=False) as outer:
            lib.mm(lib.ones(2, 3), lib.ones(3, 4))
            with _counter(lib)(display=False) as inner:
                lib.mm(lib.ones(2, 3), lib.ones(3, 4))
        assert (outer.get_total_flops(), inner.get_total_flops()) == (96, 48)


def test_mods_argument_warns():
    with pytest.warns(UserWarning, match="mods argument is not needed"):
        FlopCounterMode(mt.nn.Linear(2, 2), display=False)


def test_custom_mapping():
    def triple(a_shape, b_shape, *args, out_shape=None, **kwargs):
        return 3 * a_shape[0] * b_shape[1]

    for lib, key in ((mt, mt_fc.aten.mm), (mt, "aten.mm"), (torch, torch.ops.aten.mm)):
        with _counter(lib)(display=False, custom_mapping={key: triple}) as counter:
            lib.mm(lib.ones(2, 3), lib.ones(3, 4))
            lib.bmm(lib.ones(1, 2, 3), lib.ones(1, 3, 4))
        counts = {str(k): v for k, v in counter.get_flop_counts()["Global"].items()}
        assert counts == {"aten.mm": 24, "aten.bmm": 48}


def test_custom_mapping_for_a_users_function():
    class Square(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x @ x

        @staticmethod
        def backward(ctx, grad):
            return grad

    def formula(x_shape, out_shape=None):
        return 7 * x_shape[0]

    with FlopCounterMode(display=False, custom_mapping={Square: formula}) as counter:
        Square.apply(mt.ones(3, 3))
    assert counter.get_flop_counts() == {"Global": {Square: 21}}  # (its mm is not counted)
    with FlopCounterMode(display=False) as counter:
        Square.apply(mt.ones(3, 3))
    assert counter.get_flop_counts() == {"Global": {mt_fc.aten.mm: 54}}


def test_register_flop_formula():
    @mt_fc.register_flop_formula(mt_fc.aten.my_test_op)
    def my_formula(x_shape, out_shape=None):
        return 1

    assert mt_fc.flop_registry[mt_fc.aten.my_test_op] is my_formula
    assert my_formula(mt.ones(2)) == 1  # (tensors become shapes)
    with pytest.raises(RuntimeError, match="duplicate registrations"):
        mt_fc.register_flop_formula("aten::my_test_op")(my_formula)
    with pytest.raises(ValueError, match="expected each target"):
        mt_fc.register_flop_formula(3)(my_formula)
    del mt_fc.flop_registry[mt_fc.aten.my_test_op]


def test_public_formulas_match():
    cases = [("mm_flop", ((3, 4), (4, 5))), ("addmm_flop", ((5,), (3, 4), (4, 5))),
             ("bmm_flop", ((2, 3, 4), (2, 4, 5))), ("baddbmm_flop", ((2, 3, 5), (2, 3, 4),
                                                                      (2, 4, 5))),
             ("conv_flop_count", ([2, 3, 8, 8], [4, 3, 3, 3], [2, 4, 6, 6])),
             ("conv_flop_count", ([2, 3, 8, 8], [3, 4, 3, 3], [2, 4, 10, 10], True)),
             ("sdpa_flop_count", ((2, 4, 5, 8), (2, 2, 6, 8), (2, 2, 6, 3))),
             ("sdpa_backward_flop_count", ((2, 4, 5, 3), (2, 4, 5, 8), (2, 2, 6, 8),
                                           (2, 2, 6, 3))),
             ("get_suffix_str", (1001000000,)), ("convert_num_with_suffix", (123456, "K")),
             ("convert_to_percent_str", (1, 3))]
    for name, args in cases:
        assert getattr(mt_fc, name)(*args) == getattr(torch_fc, name)(*args), name
    conv_bw = ([2, 4, 6, 6], [2, 3, 8, 8], [4, 3, 3, 3], None, [1, 1], [0, 0], [1, 1], False,
               [0, 0], 1, [True, True, False])
    outs = ([2, 3, 8, 8], [4, 3, 3, 3], None)
    assert mt_fc.conv_backward_flop(*conv_bw, out_val=outs) == \
        torch_fc.conv_backward_flop(*conv_bw, out_val=outs)
    assert str(mt_fc.aten.convolution) == str(torch.ops.aten.convolution)


def test_profiler_and_counter_together():
    with mt.profiler.profile() as prof, FlopCounterMode(display=False) as counter:
        _mlp(mt)(_rand(mt, 3, 8)).sum().backward()
    assert counter.get_total_flops() == 2688
    names = {e.name for e in prof.events()}
    assert {"aten::linear", "autograd::engine::evaluate_function: AddmmBackward0"} <= names


def test_nothing_left_behind():
    from microtorch.autograd import _profiler_record
    from microtorch.nn.modules.hooks import global_hooks

    before = _profiler_record.state.active
    with FlopCounterMode(display=False):
        assert _profiler_record.state.active == before + 1
        assert global_hooks._forward_pre_hooks and global_hooks._forward_hooks
    assert _profiler_record.state.active == before
    assert not (global_hooks._forward_pre_hooks or global_hooks._forward_hooks)
    assert _profiler_record._tls.watcher is None


# -- recurrences ---------------------------------------------------------------------------------
def _recurrent(cls, *, shape=(5, 3, 8), lengths=None, state=False, dtype=None, frozen=(),
               **kwargs):
    """``cls`` (RNN/GRU/LSTM) of input 8 and hidden 16 on ``shape``, forward and backward:
    packed when ``lengths`` are given, with initial states requiring grad when ``state``."""
    def run(lib):
        module = getattr(lib.nn, cls)(8, 16, **kwargs)
        dt = getattr(lib, dtype) if dtype else lib.float32
        module = module.to(dt)
        for name in frozen:
            getattr(module, name).requires_grad_(False)
        x = lib.randn(*shape, dtype=dt, requires_grad=True)
        inp = x if lengths is None else lib.nn.utils.rnn.pack_padded_sequence(
            x, lib.tensor(lengths), batch_first=kwargs.get("batch_first", False),
            enforce_sorted=False)
        args = (inp,)
        if state:
            k = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
            n = shape[0] if kwargs.get("batch_first") else shape[1]
            h = lib.randn(k, n, kwargs.get("proj_size") or 16, dtype=dt, requires_grad=True)
            c = lib.randn(k, n, 16, dtype=dt, requires_grad=True)
            args = (inp, (h, c) if cls == "LSTM" else h)
        out = module(*args)[0]
        (out.data if lengths is not None else out).sum().backward()

    return run


_RECURRENT = {
    "big": dict(shape=(4, 5, 8), num_layers=2, bidirectional=True, batch_first=True),
    "no-bias": dict(bias=False),
    "states": dict(state=True, num_layers=2),
    "packed": dict(lengths=[5, 3, 2], bidirectional=True, num_layers=2, state=True),
    "packed-batch-first": dict(shape=(3, 5, 8), lengths=[5, 4, 1], batch_first=True,
                               bidirectional=True, bias=False),
    "unbatched": dict(shape=(5, 8), batch_first=True, bidirectional=True),
    "frozen-input-weight": dict(shape=(4, 5, 8), batch_first=True, frozen=["weight_ih_l0"]),
    "frozen-state-weight": dict(frozen=["weight_hh_l0", "bias_hh_l0"]),
    "dropout": dict(num_layers=3, dropout=0.3),
    "float64": dict(dtype="float64", bidirectional=True),
}


@pytest.mark.parametrize("cls", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("case", sorted(_RECURRENT))
def test_recurrent_layers(cls, case):
    """PyTorch's CPU layers (per step addmm/mm); its float32 LSTM (oneDNN) counts nothing."""
    _same(_recurrent(cls, **_RECURRENT[case]))


@pytest.mark.parametrize("kwargs", [dict(proj_size=4), dict(proj_size=4, num_layers=2,
                                                             bidirectional=True, state=True),
                                    dict(proj_size=4, lengths=[5, 3, 2]),
                                    dict(nonlinearity="relu")])
def test_recurrent_layers_more(kwargs):
    _same(_recurrent("LSTM" if "proj_size" in kwargs else "RNN", **kwargs))


def test_recurrent_forward_only_and_onednn_switch():
    _same(lambda lib: lib.nn.GRU(8, 16, num_layers=2)(_rand(lib, 5, 3, 8)))

    def no_onednn(lib):
        if lib is torch:  # (PyTorch's flags may be frozen: torch.testing's imports freeze them)
            with torch.backends.mkldnn.flags(enabled=False):
                _recurrent("LSTM")(lib)
            return
        lib.backends.mkldnn.enabled = False
        try:
            _recurrent("LSTM")(lib)
        finally:
            lib.backends.mkldnn.enabled = True

    assert _same(no_onednn)["LSTM"]["aten.mm"] > 0


@pytest.mark.parametrize("cls", ["LSTMCell", "GRUCell", "RNNCell"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("state", [True, False])
def test_recurrent_cells(cls, bias, state):
    """Cells: addmm (mm without bias) of the input and of the state, their backward mm's,
    counted per module as PyTorch's (the input made by an op: see below)."""
    def run(lib):
        cell = getattr(lib.nn, cls)(8, 16, bias=bias)
        x = _rand(lib, 3, 8, grad=True) * 2
        args = (x,)
        if state:
            h = _rand(lib, 3, 16, grad=True)
            args = (x, (h, _rand(lib, 3, 16, grad=True)) if cls == "LSTMCell" else h)
        out = cell(*args)
        (out[0] if isinstance(out, tuple) else out).sum().backward()

    _same(run)
