"""Tensor conversions and Python protocols against PyTorch: ``__format__`` with format
specs, NumPy operands (``tensor + array``, ``array + tensor``), ``__array__``,
``tolist``/``numpy``/``item`` edge cases, ``torch.Size`` methods and the legacy constructors
(``FloatTensor`` & co, ``Tensor(sizes)``). Results are compared by their printed form, with
``microtorch`` read as ``torch``."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import microtorch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

CASES = {
    "format_spec": lambda m: f"{m.tensor(1.23456):.4f}",
    "format_sign": lambda m: f"{m.tensor(1.23456):+.2f}",
    "format_empty_0d": lambda m: f"{m.tensor(1.23456)}",
    "format_int": lambda m: f"{m.tensor(3):d}",
    "format_width": lambda m: f"{m.tensor(3):5}",
    "format_bool": lambda m: f"{m.tensor(True)}",
    "format_requires_grad": lambda m: f"{m.tensor(2.5, requires_grad=True):.1f}",
    "format_graph_result": lambda m: f"{(m.tensor(2.5, requires_grad=True) * 2).sum():.3f}",
    "format_vector_empty_spec": lambda m: format(m.tensor([1, 2]), ""),
    "format_vector_spec": lambda m: f"{m.tensor([1.5, 2.5]):.2f}",
    "format_one_element_vector": lambda m: format(m.tensor([1.5]), ".2f"),
    "format_parameter": lambda m: f"{m.nn.Parameter(m.tensor(1.5))}",
    "add_array": lambda m: m.tensor([1.0, 2.0]) + np.array([1.0, 2.0]),
    "add_int_array": lambda m: m.tensor([1.0, 2.0]) + np.array([1, 2]),
    "add_0d_array": lambda m: m.tensor([1.0, 2.0]) + np.array(2.0),
    "int_tensor_float_array": lambda m: m.tensor([1, 2], dtype=m.int32) * np.ones(2, np.float32),
    "sub_array": lambda m: m.tensor([1.0, 2.0]) - np.array([0.5, 1], np.float32),
    "div_array": lambda m: m.tensor([1, 2]) / np.array([2, 4]),
    "pow_array": lambda m: m.tensor([1.0, 2.0]) ** np.array([2, 3]),
    "matmul_array": lambda m: m.tensor([1.0, 2.0]) @ np.ones((2, 2)),
    "and_array": lambda m: m.tensor([True, False]) & np.array([True, True]),
    "eq_array": lambda m: m.tensor([1.0, 2.0]) == np.array([1.0, 3.0]),
    "ne_array_requires_grad": lambda m: m.ones(2, requires_grad=True) != np.ones(2),
    "add_array_requires_grad": lambda m: m.ones(2, requires_grad=True) + np.ones(2),
    "array_add": lambda m: np.array([1.0, 2.0]) * m.tensor([1.0, 2.0]),
    "array_sub": lambda m: np.array([1.0, 2.0]) - m.tensor([1.0, 2.0]),
    "numpy_scalar_mul": lambda m: np.float64(2) * m.tensor([1.0, 2.0]),
    "asarray_dtype": lambda m: np.asarray(m.tensor([1.0, 2.0])).dtype,
    "array_with_dtype": lambda m: np.array(m.tensor([1, 2]), dtype=np.float64),
    "asarray_requires_grad": lambda m: np.asarray(m.tensor([1.0, 2.0], requires_grad=True)),
    "numpy_requires_grad": lambda m: m.tensor([1.0, 2.0], requires_grad=True).numpy(),
    "array_priority": lambda m: m.tensor([1.0]).__array_priority__,
    "tolist_0d": lambda m: m.tensor(3.5).tolist(),
    "tolist_bool": lambda m: m.tensor([True]).tolist(),
    "tolist_empty": lambda m: m.zeros(2, 0).tolist(),
    "item_bool": lambda m: m.tensor(True).item(),
    "item_nested": lambda m: m.tensor([[2]]).item(),
    "item_many": lambda m: m.tensor([1.0, 2.0]).item(),
    "item_half": lambda m: m.tensor(3.5, dtype=m.float16).item(),
    "item_uint8_type": lambda m: type(m.tensor(3, dtype=m.uint8).item()).__name__,
    "numpy_0d": lambda m: m.tensor(3).numpy(),
    "size_numel": lambda m: m.Size([2, 3, 4]).numel(),
    "size_slice": lambda m: m.Size([2, 3, 4])[1:],
    "size_index": lambda m: m.Size([2, 3, 4])[-1],
    "size_add": lambda m: m.Size([2, 3]) + (5,),
    "size_radd": lambda m: (5,) + m.Size([2, 3]),
    "size_mul": lambda m: m.Size([2, 3]) * 2,
    "size_repr": lambda m: repr(m.Size([2, 3])),
    "size_empty": lambda m: m.Size(),
    "size_eq": lambda m: m.Size([2, 3]) == (2, 3),
    "size_type_of_slice": lambda m: type(m.ones(2, 3).shape[:1]).__name__,
    "size_float": lambda m: m.Size([2.5]),
    "size_count_index": lambda m: (m.Size([2, 3, 3]).count(3), m.Size([2, 3]).index(3)),
    "float_tensor_data": lambda m: m.FloatTensor([1, 2]),
    "float_tensor_sizes": lambda m: m.FloatTensor(2, 3).shape,
    "long_tensor_truncates": lambda m: m.LongTensor([1.7, 2]),
    "double_tensor": lambda m: m.DoubleTensor([[1]]),
    "int_tensor": lambda m: m.IntTensor([1, 2]),
    "bool_tensor": lambda m: m.BoolTensor([1, 0]),
    "byte_tensor": lambda m: m.ByteTensor([1, 44]),
    "long_tensor_size": lambda m: m.LongTensor(m.Size([2])).shape,
    "long_tensor_dtype": lambda m: m.LongTensor(3).dtype,
    "empty_float_tensor": lambda m: m.FloatTensor(),
    "tensor_empty": lambda m: m.Tensor(),
    "tensor_data": lambda m: m.Tensor([1, 2]),
    "tensor_nested_dtype": lambda m: m.Tensor([[1, 2]]).dtype,
    "tensor_sizes": lambda m: m.Tensor(2, 3).shape,
    "tensor_tuple_is_data": lambda m: m.Tensor((2, 3)),
    "tensor_from_array": lambda m: m.Tensor(np.array([1, 2])),
    "float_tensor_from_array": lambda m: m.FloatTensor(np.array([1, 2])),
    "isinstance_float": lambda m: isinstance(m.ones(2), m.FloatTensor),
    "isinstance_long": lambda m: (isinstance(m.ones(2, dtype=m.long), m.LongTensor),
                                  isinstance(m.ones(2), m.LongTensor)),
    "type_name": lambda m: (m.ones(2).type(), m.ones(2, dtype=m.uint8).type()),
    "type_to_legacy": lambda m: m.ones(2).type(m.LongTensor),
    "type_to_string": lambda m: m.ones(2).type("torch.IntTensor"),
    "type_to_dtype": lambda m: m.ones(2).type(m.float64),
    # issue 25: NumPy functions give tensors back, any sequence or foreign array is data,
    # public classes print with their public module, every is_<kind> query exists
    "numpy_ufunc": lambda m: np.sin(m.tensor([0.5, 1.0])),
    "numpy_ufunc_0d": lambda m: np.sin(m.tensor(0.5)),
    "numpy_ufunc_bool_is_uint8": lambda m: np.greater(m.tensor([0.5, -1.0]), 0),
    "numpy_ufunc_two_tensors": lambda m: np.add(m.tensor([1, 2]), m.tensor([3, 4])),
    "numpy_ufunc_requires_grad": lambda m: np.sin(m.ones(2, requires_grad=True)),
    "tensor_of_deque": lambda m: m.tensor(__import__("collections").deque([1, 2])),
    "tensor_of_range": lambda m: m.tensor(range(3)),
    "tensor_of_set": lambda m: m.tensor({1, 2}),
    "tensor_of_torch_tensor": lambda m: m.tensor(torch.arange(3.0)),
    "tensor_of_torch_int_tensor": lambda m: m.tensor(torch.arange(3, dtype=torch.int16)),
    "tensor_of_torch_tensors": lambda m: m.tensor([torch.tensor(1.0), torch.tensor(2.0)]),
    "as_tensor_of_torch_tensor": lambda m: m.as_tensor(torch.ones(2, dtype=torch.float64)),
    "from_dlpack_torch": lambda m: m.from_dlpack(torch.arange(3)),
    "from_dlpack_numpy": lambda m: m.from_dlpack(np.arange(3.0)),
    "dlpack_round_trip": lambda m: m.utils.dlpack.from_dlpack(
        m.utils.dlpack.to_dlpack(m.arange(4.0))),
    "dlpack_requires_grad": lambda m: m.ones(2, requires_grad=True).__dlpack__(),
    "type_of_tensor": lambda m: type(m.ones(1)),
    "type_of_size": lambda m: type(m.ones(1).shape),
    "type_of_dtype": lambda m: type(m.float32),
    "type_of_device": lambda m: type(m.device("cpu")),
    "finfo_class": lambda m: m.finfo,
    "is_kinds": lambda m: [getattr(m.ones(1), f"is_{k}") for k in (
        "cpu", "cuda", "xpu", "mps", "meta", "ipu", "xla", "mtia", "maia", "vulkan",
        "mkldnn", "quantized", "nested")],
}


def _run(m, fn) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch's __array__ signature
        try:
            result = fn(m)
        except Exception as exc:  # noqa: BLE001 - the error type is the result compared
            return f"{type(exc).__name__}"
    return result if isinstance(result, str) else repr(result)


@pytest.mark.parametrize("name", CASES)
def test_same_as_torch(name):
    ours = _run(microtorch, CASES[name]).replace("microtorch", "torch")
    assert ours == _run(torch, CASES[name])


def test_array_results_are_plain_tensors_without_graph():
    x = microtorch.tensor([1.0, 2.0])
    out = x + np.array([1.0, 2.0])
    assert type(out) is microtorch.Tensor and out.grad_fn is None
    assert out.dtype == microtorch.float64


def test_format_in_a_training_log_line():
    loss = (microtorch.tensor([0.25, 0.5], requires_grad=True) ** 2).mean()
    tloss = (torch.tensor([0.25, 0.5], requires_grad=True) ** 2).mean()
    line = "epoch {:3d} loss {:.6f} acc {:>8.2%}"
    assert line.format(1, loss, microtorch.tensor(0.875)) == line.format(1, tloss,
                                                                        torch.tensor(0.875))


@pytest.mark.parametrize("dtype", ["int32", "int16", "float64", "uint8", "float32"])
def test_view_as_dtype_reinterprets_the_bytes_as_pytorch(dtype):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    ours = microtorch.from_numpy(x.copy()).view(getattr(microtorch, dtype))
    theirs = torch.from_numpy(x.copy()).view(getattr(torch, dtype))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert not ours.requires_grad


@pytest.mark.parametrize("make, dtype", [
    (lambda m: m.arange(3.0), "float64"),
    (lambda m: m.arange(12.0).reshape(3, 4).t(), "int16"),
])
def test_view_as_dtype_errors_match_pytorch(make, dtype):
    with pytest.raises(RuntimeError) as theirs:
        make(torch).view(getattr(torch, dtype))
    with pytest.raises(RuntimeError, match=re.escape(str(theirs.value))):
        make(microtorch).view(getattr(microtorch, dtype))


def test_torch_tensor_round_trips_through_dlpack_sharing_memory():
    t = torch.arange(4.0)
    mine = microtorch.from_dlpack(t)
    mine[0] = 9.0
    assert t[0].item() == 9.0  # shared, as PyTorch's from_dlpack
    back = torch.from_dlpack(mine)
    back[1] = 7.0
    assert mine[1].item() == 7.0
    capsule = microtorch.utils.dlpack.to_dlpack(mine)
    assert microtorch.utils.dlpack.from_dlpack(capsule).tolist() == [9.0, 7.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="consumed only once"):
        microtorch.utils.dlpack.from_dlpack(capsule)
    copied = microtorch.tensor(t)  # tensor() copies
    copied[2] = -1.0
    assert t[2].item() == 2.0


@pytest.mark.parametrize("call", [
    lambda m, p, g: p.add_(-0.1, g),
    lambda m, p, g: p.sub_(2, g),
    lambda m, p, g: m.add(p, 2, g),
    lambda m, p, g: m.sub(p, 2, g),
    lambda m, p, g: p.add(2, g),
    lambda m, p, g: p.addcmul_(0.5, g, g),
    lambda m, p, g: p.addcdiv_(0.5, g, g + 1),
    lambda m, p, g: m.addcmul(p, 2, g, g),
    lambda m, p, g: m.addcdiv(p, 2, g, g + 1),
    lambda m, p, g: m.addmm(2, p.reshape(1, 3).expand(3, 3), 3, g.reshape(3, 1) * 1.0,
                            g.reshape(1, 3) * 1.0),
    lambda m, p, g: m.addmm(2, p.reshape(1, 3).expand(3, 3), g.reshape(3, 1) * 1.0,
                            g.reshape(1, 3) * 1.0),
    lambda m, p, g: m.baddbmm(2, p.reshape(1, 1, 3), 3, g.reshape(1, 3, 1) * 1.0,
                              g.reshape(1, 1, 3) * 1.0),
])
def test_deprecated_scalar_first_overloads_warn_and_compute_as_pytorch(call):
    """Old tutorials' ``p.data.add_(-lr, p.grad.data)`` and friends: PyTorch 2.13's values and
    its deprecation warning (PyTorch warns for the first such call of a process only)."""
    from microtorch.ops import deprecated_overloads

    deprecated_overloads._warned.clear()
    results = []
    for m in (torch, microtorch):
        p, g = m.tensor([1.0, 2.0, 3.0]), m.tensor([0.5, 1.5, 2.0])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = call(m, p, g)
        results.append((out.tolist(), p.tolist()))
        messages = [str(w.message).split(" (Triggered")[0] for w in caught]
        if m is microtorch:
            assert len(messages) == 1 and messages[0].startswith("This overload of ")
            assert caught[0].filename == __file__
            ours = messages[0]
        else:
            theirs = messages
    assert results[0] == results[1]
    if theirs:  # (torch warns for its process's first deprecated call only)
        assert ours == theirs[0].replace("torch.dtype out_dtype", "")


def test_deprecated_forms_need_the_old_types():
    with pytest.raises(TypeError):
        microtorch.add(microtorch.ones(2), 2, 3)  # a number where the tensor was: an error
