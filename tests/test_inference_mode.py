"""inference_mode with PyTorch's semantics: inference tensors (``is_inference()``), their views,
autograd refusing to save them, in-place writes refused outside the mode, no version counter,
``requires_grad_``, normal tensors' views and in-place writes inside the mode, nesting with
``inference_mode(False)``, the decorator forms; every check side by side with PyTorch, on the
CPU and the CUDA stand-in."""

from __future__ import annotations

import threading

import pytest

import microtorch as mt

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch


def _outcome(fn):
    """('ok', value) or (exception class name, message) with microtorch read as torch."""
    try:
        value = fn()
    except Exception as exc:  # noqa: BLE001 - the outcome itself is compared
        return type(exc).__name__, str(exc).replace("microtorch", "torch")
    if hasattr(value, "tolist"):
        value = value.tolist()
    return "ok", value


def _both(build, device):
    """Run ``build(module, device_kwargs)`` on microtorch and PyTorch; their outcomes."""
    return (_outcome(lambda: build(mt, {"device": device})),
            _outcome(lambda: build(torch, {})))


SCENARIOS = {
    "made_inside": lambda m, d: _inside(m, d, lambda a: a.is_inference()),
    "requires_grad_inside": lambda m, d: _inside(
        m, d, lambda a: m.ones(2, requires_grad=True, **d).is_inference()),
    "saved_for_backward": lambda m, d: (m.ones(2, requires_grad=True, **d)
                                        * _inference(m, d)).sum(),
    "used_not_saved": lambda m, d: (m.ones(2, requires_grad=True, **d)
                                    + _inference(m, d)).sum(),
    "linear_backward": lambda m, d: m.nn.Linear(2, 2).to(**d)(_inference(m, d)).sum()
    .backward(),
    "no_grad_use": lambda m, d: _no_grad(m, lambda: m.ones(2, requires_grad=True, **d)
                                         * _inference(m, d)),
    "add_": lambda m, d: _inference(m, d).add_(1),
    "zero_": lambda m, d: _inference(m, d).zero_(),
    "fill_": lambda m, d: _inference(m, d).fill_(3.0),
    "copy_": lambda m, d: _inference(m, d).copy_(m.zeros(2, **d)),
    "setitem": lambda m, d: _inference(m, d).__setitem__(0, 5.0),
    "uniform_": lambda m, d: _inference(m, d).uniform_(),
    "exp_": lambda m, d: _inference(m, d).exp_(),
    "out=": lambda m, d: m.add(m.ones(2, **d), 1, out=_inference(m, d)),
    "version": lambda m, d: _inference(m, d)._version,
    "requires_grad_": lambda m, d: _inference(m, d).requires_grad_(),
    "requires_grad_false": lambda m, d: _inference(m, d).requires_grad_(False).requires_grad,
    "view_outside": lambda m, d: _inference(m, d)[0].is_inference(),
    "view_inplace_outside": lambda m, d: _inference(m, d)[0].mul_(2),
    "detach": lambda m, d: _inference(m, d).detach().is_inference(),
    "result_outside": lambda m, d: (_inference(m, d) + 1).is_inference(),
    "clone": lambda m, d: _inference(m, d).clone().is_inference(),
    "inplace_inside": lambda m, d: _inside(m, d, lambda a: a.add_(1).tolist()),
    "normal_view_inside": lambda m, d: _normal_view_inside(m, d),
    "normal_inplace_inside": lambda m, d: _normal_inplace_inside(m, d),
    "graph_inside": lambda m, d: _graph_inside(m, d),
    "nested_false": lambda m, d: _nested_false(m, d),
}


def _inference(m, d):
    with m.inference_mode():
        return m.ones(2, **d)


def _inside(m, d, fn):
    with m.inference_mode():
        return fn(m.ones(2, **d))


def _no_grad(m, fn):
    with m.no_grad():
        return fn().tolist()


def _normal_view_inside(m, d):
    x = m.ones(3, **d)
    with m.inference_mode():
        v = x[:2]
        inside = v.is_inference()
    v.add_(1)  # a normal tensor's view: writable outside
    return inside, x.tolist(), x._version


def _normal_inplace_inside(m, d):
    x = m.ones(3, **d)
    with m.inference_mode():
        x.mul_(2)
    return x._version, x.is_inference()


def _graph_inside(m, d):
    x = m.ones(2, requires_grad=True, **d)
    with m.inference_mode():
        y = x * 2
    return y.requires_grad, y.grad_fn is None, y.is_inference()


def _nested_false(m, d):
    with m.inference_mode():
        with m.inference_mode(False):
            z = m.ones(1, **d)
            inner = (z.is_inference(), m.is_inference_mode_enabled(), m.is_grad_enabled())
        outer = (m.is_inference_mode_enabled(), m.is_grad_enabled())
    return inner, outer, m.is_inference_mode_enabled()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_inference_tensors_as_pytorch(name, device):
    got, want = _both(SCENARIOS[name], device)
    assert got == want


@pytest.mark.parametrize("lib", [mt, torch], ids=["microtorch", "torch"])
def test_decorators_and_grad_mode_restored(lib):
    @lib.inference_mode()
    def called():
        return lib.ones(1).is_inference(), lib.is_grad_enabled()

    @lib.inference_mode
    def bare():
        return lib.ones(1).is_inference()

    @lib.inference_mode(mode=False)
    def off():
        return lib.ones(1).is_inference(), lib.is_inference_mode_enabled()

    assert called() == (True, False) and bare() is True and off() == (False, False)
    with lib.no_grad():
        with lib.inference_mode():
            pass
        assert not lib.is_grad_enabled()
    assert lib.is_grad_enabled() and not lib.is_inference_mode_enabled()


def test_inference_mode_belongs_to_its_thread():
    seen = {}
    ready, done = threading.Event(), threading.Event()

    def other():
        ready.wait()
        seen["other"] = mt.ones(1).is_inference()
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with mt.inference_mode():
        ready.set()
        done.wait()
        seen["here"] = mt.ones(1).is_inference()
    thread.join()
    assert seen == {"other": False, "here": True}


def test_custom_function_refuses_saved_inference_tensor():
    class Square(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(y)
            return x * y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y, None

    with mt.inference_mode():
        y = mt.ones(2)
    x = mt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        Square.apply(x, y)
    with mt.no_grad():
        assert Square.apply(x, y).tolist() == [1.0, 1.0]
