"""The namespaces scripts touch at import time, against PyTorch where it defines the answer:
accelerator, backends flags, onnx, jit, compile, thread counts (through threadpoolctl),
print options, deterministic flags and the version string."""

from __future__ import annotations

import importlib

import pytest
from _torch_compare import same_error
from threadpoolctl import threadpool_info

import microtorch as mt

torch = pytest.importorskip("torch")


# -- accelerator ----------------------------------------------------------------------------
def test_accelerator_reports_the_gpu_or_none():
    acc = mt.accelerator
    if mt.cuda.is_available():
        assert acc.is_available() and acc.current_accelerator() == mt.device("cuda")
        assert acc.device_count() == mt.cuda.device_count()
        assert acc.current_device_index() == mt.cuda.current_device()
        acc.synchronize()
        return
    assert acc.is_available() is False and acc.current_accelerator() is None
    assert acc.device_count() == 0
    if not torch.accelerator.is_available():  # the same machine: PyTorch's words
        same_error(acc.current_device_index, torch.accelerator.current_device_index,
                   RuntimeError)
        same_error(acc.synchronize, torch.accelerator.synchronize, RuntimeError)


def test_accelerator_device_idiom_of_pytorch_examples():
    acc = mt.accelerator.current_accelerator().type if mt.accelerator.is_available() else "cpu"
    x = mt.ones(2, device=acc)
    assert x.device.type == acc


# -- backends ---------------------------------------------------------------------------------
FLAGS = [("cudnn", "benchmark"), ("cudnn", "deterministic"), ("cudnn", "enabled"),
         ("cudnn", "allow_tf32"), ("cuda.matmul", "allow_tf32"),
         ("cuda.matmul", "allow_bf16_reduced_precision_reduction"),
         ("cuda.matmul", "allow_fp16_reduced_precision_reduction"), ("mkldnn", "enabled")]


def _ns(root, path):
    for part in path.split("."):
        root = getattr(root, part)
    return root


@pytest.mark.parametrize("path, flag", FLAGS)
def test_backend_flags_have_torch_defaults_and_are_settable(path, flag):
    ns = _ns(mt.backends, path)
    assert getattr(ns, flag) == getattr(_ns(torch.backends, path), flag)
    before = getattr(ns, flag)
    try:
        setattr(ns, flag, not before)
        assert getattr(ns, flag) is (not before)
    finally:
        setattr(ns, flag, before)


def test_backend_flag_docs_say_they_change_nothing():
    for mod in (mt.backends.cudnn, mt.backends.cuda, mt.backends.mkldnn,
                mt.backends.opt_einsum):
        assert "change nothing" in mod.__doc__ or "changes nothing" in mod.__doc__


def test_unknown_matmul_flag_is_an_error_as_in_torch():
    def set_mt():
        mt.backends.cuda.matmul.alow_tf32 = True

    def set_torch():
        torch.backends.cuda.matmul.alow_tf32 = True

    same_error(set_mt, set_torch, AttributeError)
    same_error(lambda: mt.backends.cuda.matmul.nope, lambda: torch.backends.cuda.matmul.nope,
               AttributeError)


def test_backend_queries():
    b = mt.backends
    assert b.cudnn.is_available() is False and b.cudnn.version() is None
    assert b.mps.is_available() is False and b.mps.is_built() is False
    assert b.mkldnn.is_available() is False
    assert b.opt_einsum.is_available() == (importlib.util.find_spec("opt_einsum") is not None)
    assert b.opt_einsum.enabled == torch.backends.opt_einsum.enabled
    assert b.opt_einsum.strategy == torch.backends.opt_einsum.strategy
    assert b.cuda.is_built() == (importlib.util.find_spec("cupy") is not None)
    for name in ("backends.cudnn", "backends.cuda", "backends.mps", "backends.mkldnn",
                 "backends.opt_einsum", "onnx", "jit", "accelerator", "version"):
        importlib.import_module(f"microtorch.{name}")  # `import torch.backends.cudnn` works


def test_float32_matmul_precision():
    assert mt.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
    try:
        mt.set_float32_matmul_precision("high")
        assert mt.get_float32_matmul_precision() == "high"
        with pytest.warns(UserWarning, match="has no effect"):
            mt.set_float32_matmul_precision("fastest")
        assert mt.get_float32_matmul_precision() == "high"
    finally:
        mt.set_float32_matmul_precision("highest")


# -- onnx, jit, compile -------------------------------------------------------------------------
def test_onnx_export_raises_not_implemented():
    with pytest.raises(NotImplementedError, match="no ONNX exporter"):
        mt.onnx.export(mt.nn.Linear(2, 2), mt.ones(1, 2), "model.onnx")
    assert mt.onnx.is_in_onnx_export() is False


def test_jit_gives_back_what_it_gets():
    lin = mt.nn.Linear(2, 2)

    @mt.jit.script
    def f(x):
        return x * 2

    assert mt.jit.script(lin) is lin and mt.jit.trace(lin, mt.ones(1, 2)) is lin
    assert f(mt.ones(2)).tolist() == [2.0, 2.0]
    assert mt.jit.ignore(f) is f and mt.jit.ignore(drop=True)(f) is f
    assert mt.jit.is_scripting() is False and mt.jit.is_tracing() is False
    with pytest.raises(NotImplementedError, match="no TorchScript"):
        mt.jit.save(lin, "m.pt")


def test_compile_returns_the_callable_in_every_form():
    lin = mt.nn.Linear(2, 2)
    assert mt.compile(lin) is lin

    @mt.compile
    def f(x):
        return x + 1

    @mt.compile(mode="max-autotune", fullgraph=True)
    def g(x):
        return x - 1

    assert f(1) == 2 and g(1) == 0


def test_compile_argument_errors_match_torch():
    same_error(lambda: mt.compile(lambda x: x, mode="foo"),
               lambda: torch.compile(lambda x: x, mode="foo"), RuntimeError)
    same_error(lambda: mt.compile(lambda x: x, mode="default", options={}),
               lambda: torch.compile(lambda x: x, mode="default", options={}), RuntimeError)
    same_error(lambda: mt.compile(3), lambda: torch.compile(3), AssertionError)


# -- threads ----------------------------------------------------------------------------------
def _blas_threads() -> set:
    return {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}


def test_set_num_threads_limits_numpys_blas_pool():
    before = mt.get_num_threads()
    try:
        mt.set_num_threads(1)
        assert _blas_threads() == {1} and mt.get_num_threads() == 1
        mt.set_num_threads(2)  # (raising it works too, also from a 1-thread start)
        assert _blas_threads() == {2} and mt.get_num_threads() == 2
    finally:
        mt.set_num_threads(before)
    assert mt.get_num_threads() == before


@pytest.mark.parametrize("bad", [0, -1, "a", 2.0])
def test_set_num_threads_errors_match_torch(bad):
    same_error(lambda: mt.set_num_threads(bad), lambda: torch.set_num_threads(bad),
               RuntimeError)
    same_error(lambda: mt.set_num_interop_threads(bad),
               lambda: torch.set_num_interop_threads(bad), RuntimeError)


def test_interop_threads_may_be_set_once(monkeypatch):
    from microtorch import _threads

    monkeypatch.setattr(_threads, "_interop_threads", None)
    assert mt.get_num_interop_threads() >= 1
    mt.set_num_interop_threads(3)
    assert mt.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="cannot set number of interop threads"):
        mt.set_num_interop_threads(2)


# -- print options ------------------------------------------------------------------------------
@pytest.fixture
def restore_printoptions():
    yield
    mt.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


PRINT_CASES = [
    (dict(precision=2), lambda L: L.tensor([1.12345, 2.5])),
    (dict(sci_mode=True), lambda L: L.tensor([1.0, 2.0])),
    (dict(sci_mode=False), lambda L: L.tensor([1e-8, 1.0])),
    (dict(sci_mode=True), lambda L: L.tensor([0.0, 0.0])),
    (dict(sci_mode=True), lambda L: L.tensor([1.0, 20.0])),
    (dict(precision=2, linewidth=20), lambda L: L.arange(20.0)),
    (dict(profile="short", threshold=5), lambda L: L.arange(10)),
    (dict(edgeitems=1, threshold=3), lambda L: L.arange(24.0).reshape(2, 3, 4)),
    (dict(profile="full"), lambda L: L.arange(1200)),
    (dict(threshold=10, edgeitems=2), lambda L: L.arange(30.0).reshape(5, 6)),
    (dict(linewidth=40), lambda L: L.tensor([[1.5] * 12], dtype=L.float64)),
    (dict(precision=6), lambda L: L.tensor([1 / 3 + 2j / 3])),
]


@pytest.mark.parametrize("options, make", PRINT_CASES)
def test_set_printoptions_changes_repr_as_torch(options, make, restore_printoptions):
    mt.set_printoptions(**options)
    torch.set_printoptions(**options)
    assert repr(make(mt)).replace("microtorch", "torch") == repr(make(torch))


def test_printoptions_reset_by_default_profile(restore_printoptions):
    mt.set_printoptions(precision=1, sci_mode=True)
    mt.set_printoptions(profile="default")
    assert repr(mt.tensor([1.12345])) == "tensor([1.1235])"
    with pytest.raises(ValueError, match="profile must be one of"):
        mt.set_printoptions(profile="tiny")


# -- determinism --------------------------------------------------------------------------------
def test_deterministic_flags_round_trip():
    assert mt.are_deterministic_algorithms_enabled() is False
    try:
        mt.use_deterministic_algorithms(True, warn_only=True)
        assert mt.are_deterministic_algorithms_enabled()
        assert mt.is_deterministic_algorithms_warn_only_enabled()
        assert mt.get_deterministic_debug_mode() == 1
        mt.set_deterministic_debug_mode("error")
        assert mt.get_deterministic_debug_mode() == 2
        assert not mt.is_deterministic_algorithms_warn_only_enabled()
    finally:
        mt.use_deterministic_algorithms(False)
    assert mt.get_deterministic_debug_mode() == 0


def test_deterministic_errors_match_torch():
    same_error(lambda: mt.use_deterministic_algorithms("x"),
               lambda: torch.use_deterministic_algorithms("x"), TypeError)
    same_error(lambda: mt.use_deterministic_algorithms(True, warn_only=1),
               lambda: torch.use_deterministic_algorithms(True, warn_only=1), TypeError)
    same_error(lambda: mt.set_deterministic_debug_mode(5),
               lambda: torch.set_deterministic_debug_mode(5), RuntimeError)
    same_error(lambda: mt.set_deterministic_debug_mode("x"),
               lambda: torch.set_deterministic_debug_mode("x"), RuntimeError)
    assert mt.are_deterministic_algorithms_enabled() is False


# -- version ------------------------------------------------------------------------------------
def test_version_parses_and_compares_like_torchs():
    from packaging.version import Version

    v = mt.__version__
    assert isinstance(v, str) and Version(v) >= Version("2.0")
    assert v >= "2.0" and v > "1.13.1" and v < "99" and v >= (2, 0) and not v < (2, 1)
    assert v.split(".")[0] == "2" and int(v.split(".")[1]) >= 0
    assert v == mt.version.__version__ and v.startswith(mt.version.torch_api)
    assert v.split("+")[0] == torch.__version__.split("+")[0]  # the PyTorch it is tested with
    assert mt.version.microtorch in v


def test_version_cuda_is_cupys_runtime_or_none():
    cuda = mt.version.cuda
    if importlib.util.find_spec("cupy") is None:
        assert cuda is None
    else:
        assert cuda is None or cuda.replace(".", "").isdigit()


def test_manual_seed_returns_the_generator():
    g = mt.manual_seed(3)
    assert isinstance(g, mt.Generator) and g.initial_seed() == 3


# -- default device ----------------------------------------------------------------------------
def test_default_device_is_followed_by_creation_ops_and_layers(device):
    assert str(mt.get_default_device()) == str(torch.get_default_device()) == "cpu"
    try:
        mt.set_default_device(device)
        assert mt.get_default_device().type == device
        for t in (mt.zeros(2), mt.tensor([1.0]), mt.randn(2), mt.arange(3),
                  mt.nn.Linear(2, 2).weight):
            assert t.device.type == device
        assert "device=" not in repr(mt.zeros(2))  # as PyTorch: only a non-default device
        if device == "cuda":
            assert "device='cpu'" in repr(mt.zeros(2, device="cpu"))
    finally:
        mt.set_default_device(None)
    assert mt.zeros(1).device == mt.device("cpu")


def test_default_cuda_without_a_gpu_fails_when_a_tensor_is_made():
    if mt.cuda.is_available():
        pytest.skip("a GPU is present: the device test covers cuda as the default")
    try:
        mt.set_default_device("cuda")  # accepted, as PyTorch: checked at creation
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            mt.zeros(2)
    finally:
        mt.set_default_device(None)
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda device type"):
        mt.set_default_device("tpu")
    assert mt.get_default_device() == mt.device("cpu")


def test_device_as_a_context_manager(device):
    with mt.device(device) as d:
        assert d == mt.device(device) and mt.zeros(1).device.type == device
        with mt.device("cpu"):
            assert mt.zeros(1).device.type == "cpu"
        assert mt.ones(1).device.type == device
    assert mt.zeros(1).device == mt.device("cpu")


def test_float_constants_as_pytorch():
    torch = pytest.importorskip("torch")
    import math

    import microtorch

    for name in ("e", "pi", "inf"):
        assert getattr(microtorch, name) == getattr(torch, name)
        assert type(getattr(microtorch, name)) is type(getattr(torch, name))
    assert math.isnan(microtorch.nan) and math.isnan(torch.nan)


# -- PyTorch's class paths (issue 25) ------------------------------------------------------------

_TORCH_PACKAGES = ["torch.nn.modules", "torch.optim", "torch.optim.lr_scheduler",
                   "torch.utils.data", "torch.distributions", "torch.nn.utils", "torch.autograd",
                   "torch.amp"]


def _torch_class_paths():
    """(root package, module path, class name) of every public class PyTorch defines in the
    packages above (their submodules included)."""
    import importlib
    import inspect
    import pkgutil

    pytest.importorskip("torch")
    paths = []
    for root in _TORCH_PACKAGES:
        package = importlib.import_module(root)
        modules = [package]
        for info in pkgutil.iter_modules(getattr(package, "__path__", [])):
            if not info.name.startswith("_"):
                try:
                    modules.append(importlib.import_module(f"{root}.{info.name}"))
                except Exception:  # noqa: BLE001 - optional parts of torch (onnx, ...)
                    continue
        for module in modules:
            for name, obj in vars(module).items():
                if inspect.isclass(obj) and obj.__module__ == module.__name__ and \
                        not name.startswith("_"):
                    paths.append((root, module.__name__, name))
    assert paths
    return paths


def test_every_class_microtorch_has_sits_at_pytorchs_path():
    """``torch.nn.modules.activation.MultiheadAttention``, ``torch.optim.adamw.AdamW``,
    ``torch.nn.modules.batchnorm.BatchNorm2d`` ...: where microtorch has a class of the same
    name in the same package, PyTorch's module path names it too (pickles of whole models and
    ``safe_globals`` lists use those paths)."""
    import importlib
    import inspect

    namespaces = {"torch.nn.modules": mt.nn}
    missing = []
    for root, path, name in _torch_class_paths():
        namespace = namespaces.get(root) or importlib.import_module("micro" + root)
        ours = getattr(namespace, name, None)
        if not inspect.isclass(ours):
            continue
        try:
            there = getattr(importlib.import_module("micro" + path), name, None)
        except ImportError:
            there = None
        if there is not ours:
            missing.append(f"{path}.{name} (microtorch has {ours.__module__}.{name})")
    assert not missing, missing


def test_a_whole_transformer_loads_under_pytorchs_class_paths(tmp_path):
    nn = mt.nn
    model = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    path = tmp_path / "layer.pt"
    mt.save(model, path)
    allowed = [nn.modules.transformer.TransformerEncoderLayer,
               nn.modules.activation.MultiheadAttention,
               nn.modules.linear.NonDynamicallyQuantizableLinear, nn.modules.linear.Linear,
               nn.modules.dropout.Dropout, nn.modules.normalization.LayerNorm,
               mt.nn.functional.relu]
    with mt.serialization.safe_globals(allowed):
        loaded = mt.load(path, weights_only=True)
    x = mt.randn(2, 3, 8)
    model.eval()
    loaded.eval()
    assert mt.equal(model(x), loaded(x))
    assert type(loaded.self_attn).__module__ == "microtorch.nn.modules.activation"
