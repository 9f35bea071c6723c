"""microtorch: PyTorch's API and semantics on NumPy (CPU) and CuPy (CUDA).

``import microtorch as torch`` runs PyTorch example code: tensors, autograd, ``nn``, ``optim``,
``utils.data``, ``save``/``load``, and the ``cuda`` namespace.
"""

from __future__ import annotations

import math as _math
import warnings as _warnings

from . import _dtype
from ._dtype import (
    bfloat16,
    complex64,
    complex128,
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    set_default_dtype,
    uint8,
)
from ._dtype import bool_ as bool  # noqa: A004
from ._layout import (
    layout,
    sparse_bsc,
    sparse_bsr,
    sparse_coo,
    sparse_csc,
    sparse_csr,
    strided,
)
from ._memory_format import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    memory_format,
    preserve_format,
)
from ._tensor import Size, Tensor
from ._type_promotion import can_cast, promote_types, result_type
from ._typeinfo import finfo, iinfo
from .autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .backend import get_default_device, set_default_device
from .backend.device import device
from .ops import *  # noqa: F403
from .ops import __all__ as _ops_all
from .ops import deprecated_overloads as _deprecated_overloads
from .ops import numpy_names as _numpy_names
from .ops import out_arg as _out_arg
from .ops import tensor_args as _tensor_args
from .random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from .serialization import load, save

half, float, double = float16, float32, float64  # noqa: A001
# PyTorch's Python-float constants (torch.pi, torch.inf, ...).
e, inf, nan, pi = _math.e, _math.inf, _math.nan, _math.pi
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128

from . import (  # noqa: E402
    _inplace_functions,
    accelerator,
    amp,
    autograd,
    backends,
    cpu,
    cuda,
    distributions,  # after nn: distributions build on nn.functional
    fft,
    func,  # after nn: functional_call calls modules
    functional,
    jit,
    linalg,
    masked,
    nn,
    onnx,
    optim,
    profiler,
    quasirandom,
    return_types,
    signal,
    sparse,
    special,
    testing,
    types,
    utils,
    version,
)
from ._compile import compile  # noqa: E402, A004
from ._determinism import (  # noqa: E402
    are_deterministic_algorithms_enabled,
    get_deterministic_debug_mode,
    is_deterministic_algorithms_warn_only_enabled,
    set_deterministic_debug_mode,
    use_deterministic_algorithms,
)
from ._lowrank import pca_lowrank, svd_lowrank  # noqa: E402
from ._tensor_str import set_printoptions  # noqa: E402
from ._threads import (  # noqa: E402
    get_num_interop_threads,
    get_num_threads,
    set_num_interop_threads,
    set_num_threads,
)
from ._toplevel_ops import *  # noqa: E402, F403 (torch.X forms of F / Tensor-method ops)
from ._toplevel_ops import __all__ as _toplevel_all  # noqa: E402
from ._toplevel_utils import *  # noqa: E402, F403 (asarray, range, storages, removed fns, ...)
from ._toplevel_utils import __all__ as _utils_all  # noqa: E402
from .amp.autocast_mode import (  # noqa: E402
    autocast,
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    get_autocast_cpu_dtype,
    get_autocast_dtype,
    get_autocast_gpu_dtype,
    is_autocast_cache_enabled,
    is_autocast_cpu_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_cpu_dtype,
    set_autocast_cpu_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
    set_autocast_gpu_dtype,
)
from .backends.cuda import (  # noqa: E402
    get_float32_matmul_precision,
    set_float32_matmul_precision,
)
from .func import vmap  # noqa: E402
from .nn.functional.native_normalization import (  # noqa: E402
    native_batch_norm,
    native_group_norm,
    native_layer_norm,
)
from .version import __version__  # noqa: E402

# NumPy warns when an op makes inf or NaN; PyTorch does not. Silence exactly those warnings,
# and only where microtorch's own code raised them: the user's NumPy calls still warn.
_warnings.filterwarnings(
    "ignore", message=r"(invalid value|divide by zero|overflow|underflow) encountered",
    category=RuntimeWarning, module=r"microtorch\.")


def is_tensor(obj) -> bool:  # noqa: D103
    """True for microtorch tensors."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    """The number of elements."""
    return input.numel()


def is_floating_point(input: Tensor) -> bool:
    """True for floating-point tensors."""
    return input.is_floating_point()


def is_complex(input: Tensor) -> bool:
    """True for complex tensors."""
    return input.is_complex()


_numpy_names.install(globals(), _ops_all)  # torch.sum(x, axis=0, keepdims=True)
_out_arg.install(globals())  # torch.add(a, b, out=r) and the like (Tensor methods take no out=)
_tensor_args.install(globals())  # torch.atan2(2, t) raises PyTorch's TypeError (inside:)
_deprecated_overloads.install(globals(), method=False)  # torch.add(x, 2, y), as PyTorch 2.13
_inplace_names = _inplace_functions.install(globals())  # torch.exp_(x), torch.dropout_(x, ...)
_tensor_args.install(globals())  # the in-place functions just defined (wrapped ones are kept)

__all__ = ["Tensor", "Size", "dtype", "device", "no_grad", "enable_grad", "set_grad_enabled",
           "is_grad_enabled", "inference_mode", "is_inference_mode_enabled", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "manual_seed", "seed", "initial_seed", "Generator",
           "get_rng_state", "set_rng_state", "default_generator", "autograd", "cuda", "cpu",
           "is_tensor", "numel", "is_floating_point", "is_complex", "finfo", "iinfo",
           "promote_types", "result_type", "can_cast", "accelerator", "backends", "jit", "onnx",
           "version", "compile", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_printoptions", "set_num_threads",
           "get_num_threads", "set_num_interop_threads", "get_num_interop_threads",
           "set_float32_matmul_precision", "get_float32_matmul_precision", "get_default_dtype",
           "set_default_dtype", "get_default_device", "set_default_device",
           "save", "load", "utils", "linalg", "fft", "special", "distributions", "amp",
           "profiler", "functional", "quasirandom", "testing", "types", "e", "inf", "nan",
           "pi", "sparse", "layout", "strided", "sparse_coo",
           "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "memory_format",
           "contiguous_format", "channels_last", "channels_last_3d", "preserve_format",
           "autocast", "autocast_decrement_nesting", "autocast_increment_nesting",
           "clear_autocast_cache", "get_autocast_dtype", "is_autocast_cache_enabled",
           "is_autocast_enabled", "set_autocast_cache_enabled", "set_autocast_dtype",
           "set_autocast_enabled", "get_autocast_cpu_dtype", "get_autocast_gpu_dtype",
           "is_autocast_cpu_enabled", "set_autocast_cpu_dtype", "set_autocast_cpu_enabled",
           "set_autocast_gpu_dtype", "signal", "masked", "native_batch_norm",
           "native_group_norm", "native_layer_norm", "svd_lowrank", "pca_lowrank", *_ops_all,
           *_toplevel_all, *_utils_all,
           *_inplace_names]
del _dtype


# Subpackages imported on first use: distributed builds on nn and optim (and needs mpi4py or
# CuPy to run); bench (``microtorch.bench.study_model``) pulls in the benchmark code, which
# ``import microtorch`` should not pay for.
_LAZY_SUBPACKAGES = ("distributed", "bench")


def __getattr__(name: str):
    if name in _LAZY_SUBPACKAGES:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
