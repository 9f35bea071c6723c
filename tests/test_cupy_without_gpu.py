"""The CUDA path on a machine with CuPy but no usable GPU (no driver, or no device).

What can be checked without a GPU is checked here, so that CI and developers without one still
catch a broken CUDA path: microtorch must report CUDA as absent (quickly, without raising),
refuse CUDA tensors with a clear error, every ``kernels/*.cu`` file must compile through CuPy's
own NVRTC with the options the loader passes, and every CuPy attribute
microtorch calls must exist in the installed CuPy (an API change shows up here, not on the
first GPU run).

The module skips when CuPy is not installed, and when a GPU is present (the CUDA tests cover
that case for real). A working setup without a GPU, for CUDA 13::

    pip install cupy-cuda13x "cuda-toolkit[nvrtc,cudart]==13.*"
"""

from __future__ import annotations

import inspect
import os
import re
import time
import warnings

import pytest

import microtorch
from microtorch.backend import _cuda_probe, initialized_backends, kernels

# CI installs CuPy and NVRTC (the ``cuda`` extra) and sets MICROTORCH_REQUIRE_CUPY=1: then a
# missing CuPy or NVRTC fails these tests instead of skipping them.
REQUIRED = os.environ.get("MICROTORCH_REQUIRE_CUPY") == "1"


def _absent(what: str) -> None:
    """Skip for a missing dependency (also at module level), or fail where CI requires it."""
    if REQUIRED:
        pytest.fail(f"MICROTORCH_REQUIRE_CUPY=1 but {what}", pytrace=False)
    pytest.skip(what, allow_module_level=True)


try:
    import cupy
except ImportError:
    _absent("CuPy not installed")


def _gpu_count() -> int:
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no driver, no device: both mean no usable GPU
        return 0


if _gpu_count() > 0:
    pytest.skip("a GPU is present: covered by the CUDA tests", allow_module_level=True)

ARCH = "90"  # an H100/H200: what CuPy would pick for the project's GPU machine


# --------------------------------------------------------------------------- availability


def test_cuda_is_reported_absent_quickly_and_without_raising() -> None:
    _cuda_probe.cache_clear()  # measure a real probe, not the cached answer
    start = time.perf_counter()
    available = microtorch.cuda.is_available()
    count = microtorch.cuda.device_count()
    elapsed = time.perf_counter() - start
    assert available is False
    assert count == 0
    assert elapsed < 10.0, f"probing CUDA took {elapsed:.1f} s"
    assert _cuda_probe()[1], "the probe should say why CUDA is absent"


@pytest.mark.parametrize("make", [
    pytest.param(lambda: microtorch.tensor([1.0]).to("cuda"), id="to"),
    pytest.param(lambda: microtorch.tensor([1.0]).cuda(), id="cuda"),
    pytest.param(lambda: microtorch.zeros(2, device="cuda"), id="zeros"),
    pytest.param(lambda: microtorch.tensor([1.0], device="cuda:0"), id="tensor"),
    pytest.param(lambda: microtorch.randn(3, device="cuda"), id="randn"),
])
def test_a_cuda_tensor_is_a_clear_one_line_error(make) -> None:
    with pytest.raises(RuntimeError) as info:
        make()
    message = str(info.value)
    assert "CUDA is not available" in message and "GPU" in message
    assert "cuda:0" in message  # names the device that was asked for
    assert "\n" not in message
    assert not any(b.device.type == "cuda" for b in initialized_backends())


def test_cuda_helpers_without_a_gpu() -> None:
    """Seeding and emptying caches are no-ops; synchronizing is the clear error."""
    microtorch.cuda.manual_seed(0)
    microtorch.cuda.manual_seed_all(0)
    microtorch.cuda.empty_cache()
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        microtorch.cuda.synchronize()


# --------------------------------------------------------------------------- NVRTC


def _nvrtc():
    """CuPy's NVRTC bindings, or a skip when the NVRTC library cannot be loaded."""
    from cupy.cuda import nvrtc

    try:
        nvrtc.getVersion()
    except Exception as exc:  # the wheel or toolkit that ships libnvrtc is missing
        _absent(f"NVRTC is not loadable ({type(exc).__name__}: {str(exc).strip()}); "
                f"install nvidia-cuda-nvrtc for CuPy's CUDA version")
    return nvrtc


def _loader_options(filename: str) -> tuple[str, ...]:
    """What the loader's ``compile_using_nvrtc(source, nvrtc_options(filename))`` hands NVRTC on
    an sm_90 GPU: our options, then CuPy's target and ``--device-as-default-execution-space``."""
    return kernels.nvrtc_options(filename) + (f"-arch=sm_{ARCH}",
                                              "--device-as-default-execution-space")


def _ptx_options(filename: str) -> tuple[str, ...]:
    return tuple(o.replace("-arch=sm_", "-arch=compute_") for o in _loader_options(filename))


def _compile(nvrtc, filename: str, options: tuple[str, ...], output: str) -> bytes:
    """Compile ``kernels/<filename>`` with NVRTC; ``output`` is ``"cubin"`` or ``"ptx"``."""
    program = nvrtc.createProgram(kernels.kernel_source(filename), filename, (), ())
    try:
        try:
            nvrtc.compileProgram(program, options)
        except nvrtc.NVRTCError:
            pytest.fail(f"NVRTC cannot compile kernels/{filename} with {options}:\n"
                        f"{nvrtc.getProgramLog(program)}")
        result = nvrtc.getCUBIN(program) if output == "cubin" else nvrtc.getPTX(program)
    finally:
        nvrtc.destroyProgram(program)
    return result if isinstance(result, bytes) else result.encode()


def test_cupy_finds_the_cuda_headers_that_rawmodule_needs() -> None:
    _nvrtc()
    try:
        cupy._core.core.assemble_cupy_compiler_options(())
    except AttributeError:
        pytest.skip("this CuPy assembles its compiler options elsewhere")
    except RuntimeError as exc:
        pytest.fail(f"CuPy's own kernels (every elementwise op) would fail: "
                    f"{str(exc).strip().rstrip('.')}. For CUDA 13: pip install "
                    f"'cuda-toolkit[cudart]==13.*'")


@pytest.mark.parametrize("filename", sorted(kernels.KERNELS))
def test_kernel_file_compiles_through_cupys_nvrtc(filename: str) -> None:
    nvrtc = _nvrtc()
    cubin = _compile(nvrtc, filename, _loader_options(filename), "cubin")  # for an sm_90 GPU
    ptx = _compile(nvrtc, filename, _ptx_options(filename), "ptx").decode()
    for name in kernels.KERNELS[filename]:
        assert f".entry {name}(" in ptx, f"{name} missing from kernels/{filename}"
        assert b"\0" + name.encode() + b"\0" in cubin, f"{name} missing from the cubin"


def test_optimizer_kernels_keep_multiply_adds_unfused() -> None:
    ptx = _compile(_nvrtc(), "fused_optim.cu", _ptx_options("fused_optim.cu"), "ptx").decode()
    assert not re.search(r"\bfma\.", ptx), "--fmad=false did not reach NVRTC"


@pytest.mark.parametrize("filename", sorted(kernels.KERNELS))
def test_kernels_keep_float32_subnormals(filename: str) -> None:
    """No flush-to-zero: float32 subnormals survive, as in PyTorch and the NumPy references
    (``cupy.RawModule`` would have appended ``-ftz=true``)."""
    ptx = _compile(_nvrtc(), filename, _ptx_options(filename), "ptx").decode()
    assert ".ftz" not in ptx, f"kernels/{filename} flushes subnormals to zero"


# --------------------------------------------------------------------------- CuPy API

# Every CuPy attribute microtorch calls (backend, kernels, cuda, distributed, ops, bench).
CUPY_ATTRIBUTES = """
cupy.asarray cupy.ascontiguousarray cupy.add cupy.from_dlpack cupy.get_default_memory_pool
cupy.ndarray.get cupy.ndarray.device cupy.ndarray.data cupy.ndarray.base cupy.ndarray.fill
cupy.ndarray.flags cupy.ndarray.view cupy.ndarray.__dlpack__ cupy.ndarray.__dlpack_device__
cupy.ndarray.__cuda_array_interface__ cupy.cuda.MemoryPointer.ptr
cupy.cuda.MemoryPool.total_bytes cupy.cuda.MemoryPool.used_bytes
cupy.cuda.MemoryPool.free_all_blocks
cupy.cuda.Device cupy.cuda.Device.__enter__ cupy.cuda.Device.__exit__ cupy.cuda.Device.id
cupy.cuda.runtime.getDeviceCount cupy.cuda.runtime.getDeviceProperties
cupy.cuda.runtime.CUDARuntimeError
cupy.cuda.Stream cupy.cuda.Stream.null cupy.cuda.Stream.synchronize cupy.cuda.Stream.wait_event
cupy.cuda.get_current_stream cupy.cuda.Event cupy.cuda.Event.record cupy.cuda.Event.done
cupy.random.RandomState cupy.random.RandomState.seed cupy.random.RandomState.random_sample
cupy.random.RandomState.standard_normal cupy.random.RandomState.randint
cupy.random.RandomState.permutation cupy.random.RandomState.standard_gamma
cupy.random.RandomState.poisson cupy.random.RandomState.binomial
cupy.cuda.compiler.compile_using_nvrtc cupy.cuda.function.Module
cupy.cuda.function.Module.load cupy.cuda.function.Module.get_function
cupy.cuda.function.Function
cupy.cuda.compiler.CompileException cupy.cuda.nvrtc.getVersion
cupy.lib.stride_tricks.as_strided cupy.may_share_memory cupy.take_along_axis cupy.broadcast_to
cupy.matmul cupy.repeat cupy.concatenate cupy.tanh cupy.multiply cupy.subtract cupy.maximum
cupyx.scatter_add cupyx.scipy.special.erf
cupy.tri cupy.triu cupy.eye cupy.ones cupy.zeros cupy.argsort cupy.flip cupy.einsum
cupy.indices cupy.moveaxis cupy.roll cupy.arctan2 cupy.hypot cupy.where cupy.isnan
cupy.isfinite cupy.abs cupy.copysign cupy.logaddexp cupy.exp cupy.log cupy.full cupy.zeros_like
cupyx.scipy.special.erfc cupyx.scipy.special.erfinv
cupy.sign cupy.clip cupy.sqrt cupy.divide cupy.negative cupy.dot cupy.ndarray.copy
cupy.searchsorted
cupy.cumsum cupy.log1p cupy.sin cupy.stack cupy.nextafter cupy.broadcast_arrays cupy.array
cupy.linalg.cholesky cupy.linalg.eigvalsh cupyx.errstate cupyx.scipy.special.gammaln
cupyx.scipy.special.digamma cupyx.scipy.special.polygamma cupyx.scipy.special.gammainc
cupyx.scipy.special.gammaincc cupyx.scipy.special.i0 cupyx.scipy.special.i0e
cupyx.scipy.special.i1 cupyx.scipy.special.i1e cupyx.scipy.special.k0 cupyx.scipy.special.k0e
cupyx.scipy.special.k1 cupyx.scipy.special.k1e cupyx.scipy.special.ndtri
cupyx.scipy.special.erfcx cupyx.scipy.special.zeta
""".split()

# The NCCL API of microtorch/distributed/_nccl.py (only there when CuPy finds libnccl).
NCCL_ATTRIBUTES = """
get_unique_id NcclCommunicator NcclCommunicator.allReduce NcclCommunicator.bcast
NcclCommunicator.allGather NcclCommunicator.check_async_error NcclCommunicator.abort
NcclCommunicator.destroy NCCL_FLOAT16 NCCL_FLOAT32 NCCL_FLOAT64 NCCL_INT8 NCCL_UINT8
NCCL_INT32 NCCL_INT64 NCCL_SUM NCCL_PROD NCCL_MIN NCCL_MAX
""".split()


def _resolve(root, dotted: str):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _missing(root, names: list[str]) -> list[str]:
    missing = []
    for name in names:
        try:
            _resolve(root, name)
        except AttributeError:
            missing.append(name)
    return missing


def _nccl():
    """``cupy.cuda.nccl``, or a skip when CuPy cannot load the NCCL library."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CuPy warns when libnccl is missing
        from cupy.cuda import nccl
    if not nccl.available:
        pytest.skip("the NCCL library is not installed (nvidia-nccl-cu13 for CUDA 13)")
    return nccl


def _parameters(func) -> list[str]:
    """Parameter names of a Python or Cython callable (Cython: from its embedded signature)."""
    try:
        return [n for n in inspect.signature(func).parameters if n != "self"]
    except (TypeError, ValueError):
        first_line = (func.__doc__ or "").strip().splitlines()[0]
    inside = first_line[first_line.index("(") + 1:first_line.rindex(")")]
    names = []
    for part in inside.split(","):
        part = part.split("=")[0].strip().replace("\\", "")
        if part and part not in ("*", "/"):
            names.append(part.split()[-1].lstrip("*"))
    return [n for n in names if n != "self"]


def test_every_cupy_attribute_microtorch_uses_exists() -> None:
    import cupyx
    import cupyx.scipy.special  # noqa: F401

    missing = [f"cupy.{n}" for n in _missing(cupy, [n[5:] for n in CUPY_ATTRIBUTES
                                                    if n.startswith("cupy.")])]
    missing += [f"cupyx.{n}" for n in _missing(cupyx, [n[6:] for n in CUPY_ATTRIBUTES
                                                       if n.startswith("cupyx.")])]
    assert not missing, f"CuPy {cupy.__version__} lacks {missing}"


def test_cupy_calls_take_the_arguments_we_pass() -> None:
    """The leading parameters, in order, of every CuPy call whose arguments microtorch passes
    by position, and the keywords it passes by name."""
    expected = {
        cupy.random.RandomState: ["seed", "method"],
        cupy.random.RandomState.seed: ["seed"],
        cupy.random.RandomState.random_sample: ["size", "dtype"],
        cupy.random.RandomState.standard_normal: ["size", "dtype"],
        cupy.random.RandomState.randint: ["low", "high", "size", "dtype"],
        cupy.random.RandomState.permutation: ["a"],
        cupy.random.RandomState.standard_gamma: ["shape"],
        cupy.random.RandomState.poisson: ["lam"],
        cupy.random.RandomState.binomial: ["n", "p"],
        cupy.cuda.runtime.getDeviceProperties: ["device"],
        cupy.cuda.get_current_stream: ["device_id"],
        cupy.cuda.Stream: ["null", "non_blocking"],
        cupy.cuda.Event: ["block", "disable_timing"],
        cupy.cuda.MemoryPool.free_all_blocks: ["stream"],
        cupy.cuda.compiler.compile_using_nvrtc: ["source", "options", "arch", "filename",
                                                 "name_expressions", "log_stream",
                                                 "cache_in_memory"],
    }
    for func, leading in expected.items():
        assert _parameters(func)[:len(leading)] == leading, (func, _parameters(func))
    assert {"out", "casting"} <= set(_parameters(cupy.add))  # cupy.add(..., out=, casting=)


def test_loader_options_are_tuples_as_cupys_compiler_requires() -> None:
    # compile_using_nvrtc appends with ``options += (...)``: a list would raise TypeError.
    assert all(isinstance(kernels.nvrtc_options(f), tuple) for f in kernels.KERNELS)


def test_the_nccl_api_microtorch_uses_exists() -> None:
    nccl = _nccl()
    missing = _missing(nccl, NCCL_ATTRIBUTES)
    assert not missing, f"cupy.cuda.nccl lacks {missing}"
    communicator = nccl.NcclCommunicator
    assert _parameters(communicator)[:3] == ["ndev", "commId", "rank"]
    assert _parameters(communicator.allReduce) == ["sendbuf", "recvbuf", "count", "datatype",
                                                   "op", "stream"]
    assert _parameters(communicator.bcast) == ["buff", "count", "datatype", "root", "stream"]
    assert _parameters(communicator.allGather) == ["sendbuf", "recvbuf", "count", "datatype",
                                                   "stream"]
    # ncclDataType_t and ncclRedOp_t as in nccl.h: a wrong constant would corrupt data silently.
    assert (nccl.NCCL_INT8, nccl.NCCL_UINT8, nccl.NCCL_INT32, nccl.NCCL_INT64,
            nccl.NCCL_FLOAT16, nccl.NCCL_FLOAT32, nccl.NCCL_FLOAT64) == (0, 1, 2, 4, 6, 7, 8)
    assert (nccl.NCCL_SUM, nccl.NCCL_PROD, nccl.NCCL_MAX, nccl.NCCL_MIN) == (0, 1, 2, 3)
    uid = nccl.get_unique_id()  # needs no GPU; must survive mpi4py's pickling bcast
    assert isinstance(uid, (bytes, tuple)) and len(uid) == 128


def test_nccl_is_reported_available_only_when_cupy_loads_it() -> None:
    # Without libnccl, ``from cupy.cuda import nccl`` still succeeds (with available=False).
    from microtorch import distributed as dist

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from cupy.cuda import nccl
    expected = bool(nccl.available) and dist.is_mpi_available()
    assert dist.is_nccl_available() is expected
