"""``Tensor.pin_memory()`` / ``is_pinned()``: PyTorch's errors without an accelerator, and with
CUDA (a GPU, or the CuPy stand-in) a page-locked host copy that ``.to("cuda")`` reads."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _torch_compare import same_error

import microtorch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

needs_cuda = pytest.mark.skipif(not microtorch.cuda.is_available(), reason="needs CUDA")
no_cuda = pytest.mark.skipif(microtorch.cuda.is_available(),
                             reason="checks the behaviour without an accelerator")


@no_cuda
def test_without_an_accelerator_like_pytorch():
    x, tx = microtorch.ones(2), torch.ones(2)
    assert x.is_pinned() is False and tx.is_pinned() is False
    same_error(x.pin_memory, tx.pin_memory, RuntimeError)
    assert x.tolist() == [1.0, 1.0]  # unchanged by the failed call


@no_cuda
def test_device_argument_is_deprecated():
    x = microtorch.ones(2)
    with pytest.warns(DeprecationWarning, match="argument 'device' of Tensor.is_pinned"):
        assert not x.is_pinned("cuda")
    with pytest.warns(DeprecationWarning, match="argument 'device' of Tensor.pin_memory"):
        with pytest.raises(RuntimeError):
            x.pin_memory("cuda")


def test_fresh_tensors_are_not_pinned(device):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert microtorch.arange(6.0, device=device).is_pinned() is False


@pytest.mark.cuda
@needs_cuda
def test_pinned_copy_is_a_cpu_tensor_in_page_locked_memory():
    import cupy

    x = microtorch.arange(12.0).reshape(3, 4)
    p = x.pin_memory()
    assert p is not x and p.device == microtorch.device("cpu") and p.dtype == x.dtype
    assert p.is_pinned() and not x.is_pinned()
    assert p.tolist() == x.tolist()
    attributes = cupy.cuda.runtime.pointerGetAttributes(p._data.ctypes.data)
    assert attributes.type == cupy.cuda.runtime.memoryTypeHost
    assert p.pin_memory() is p  # already pinned: itself, as PyTorch's
    assert p[1:, 2:].is_pinned()  # a view of pinned memory is pinned
    x.add_(1)  # a copy: later writes to the source do not reach it
    assert p[0, 0].item() == 0.0
    on_gpu = p.to("cuda", non_blocking=True)
    microtorch.cuda.synchronize()
    assert on_gpu.is_cuda and not on_gpu.is_pinned()
    np.testing.assert_array_equal(on_gpu.cpu().numpy(), np.arange(12.0).reshape(3, 4))


@pytest.mark.cuda
@needs_cuda
def test_pin_memory_passes_the_gradient_through():
    x = microtorch.tensor([1.0, -2.0, 3.0], dtype=microtorch.float64, requires_grad=True)
    p = x.pin_memory()
    assert p.requires_grad and p.grad_fn.name() == "PinMemoryBackward0"
    (p.to("cuda") * microtorch.tensor([1.0, 2.0, 3.0], device="cuda",
                                     dtype=microtorch.float64)).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0]


@pytest.mark.cuda
@needs_cuda
def test_gpu_tensors_cannot_be_pinned():
    g = microtorch.ones(2, device="cuda")
    assert g.is_pinned() is False
    with pytest.raises(RuntimeError, match=r"cannot pin 'microtorch.cuda.FloatTensor' only "
                                           r"dense CPU tensors can be pinned"):
        g.pin_memory()


FACTORIES = {
    "tensor": lambda m, **kw: m.tensor([[1.0, 2.0], [3.0, 4.0]], **kw),
    "empty": lambda m, **kw: m.empty(2, 3, **kw),
    "rand": lambda m, **kw: m.rand(2, 3, **kw),
    "randn": lambda m, **kw: m.randn(3, **kw),
}


@no_cuda
@pytest.mark.parametrize("name", FACTORIES)
def test_factory_pin_memory_without_an_accelerator(name):
    make = FACTORIES[name]
    microtorch.manual_seed(0)
    same_error(lambda: make(microtorch, pin_memory=True), lambda: make(torch, pin_memory=True),
               RuntimeError)
    after_failure = microtorch.rand(3).tolist()  # the failed call drew nothing
    microtorch.manual_seed(0)
    assert microtorch.rand(3).tolist() == after_failure


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("name", FACTORIES)
def test_factory_pin_memory_with_cuda(name):
    make = FACTORIES[name]
    t = make(microtorch, pin_memory=True, requires_grad=True)
    assert t.is_pinned() and t.is_leaf and t.requires_grad and t.device.type == "cpu"
    assert not make(microtorch).is_pinned()
    with pytest.raises(RuntimeError, match="Only dense CPU tensors can be pinned"):
        make(microtorch, pin_memory=True, device="cuda")
