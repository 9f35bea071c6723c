"""PyTorch's top-level in-place functions (``torch.exp_(x)``, ``torch.relu_(x)``,
``torch.dropout_(x, p, train)``, ...), generated from one table.

Most are the ``Tensor`` method of the same name called as a function; a few exist only as
functions, for in-place functional ops (PyTorch's ``_VF`` entry points), and call
``nn.functional``'s op with ``inplace=True``. PyTorch names that microtorch has no op for
(``as_strided_``, ``resize_as_``, ``embedding_renorm_``, ``resize_as_sparse_``) are left out
rather than defined to raise.
"""

from __future__ import annotations

from collections.abc import Callable

from ._tensor import Tensor

# Every ``torch.X_`` of PyTorch 2.13 whose ``X_`` is a Tensor method there.
METHOD_NAMES = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_",
    "arctan_", "arctanh_", "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "ceil_",
    "clamp_", "clamp_max_", "clamp_min_", "clip_", "conj_physical_", "cos_", "cosh_",
    "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_",
    "floor_", "frac_", "gcd_", "i0_", "index_put_", "lcm_", "ldexp_", "log10_", "log1p_",
    "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_",
    "relu_", "resize_as_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_",
    "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_",
)


def _functional() -> dict[str, Callable]:
    """The in-place functions with no Tensor method, in PyTorch's signatures."""
    from .nn import functional as F
    from .nn.functional.dropout import _check_p, _feature_dropout

    def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
        """In-place dropout (``torch.dropout_``)."""
        return F.dropout(input, p, train, inplace=True)

    def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
        """In-place alpha dropout (``torch.alpha_dropout_``)."""
        return F.alpha_dropout(input, p, train, inplace=True)

    def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
        """In-place channel dropout of (N, C, ...) input (``torch.feature_dropout_``)."""
        _check_p(p)
        return _feature_dropout(input, p, train, inplace=True)

    def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
        """In-place channel alpha dropout (``torch.feature_alpha_dropout_``)."""
        return F.feature_alpha_dropout(input, p, train, inplace=True)

    def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
        """In-place CELU (``torch.celu_``)."""
        return F.celu(input, alpha, inplace=True)

    def selu_(input: Tensor) -> Tensor:
        """In-place SELU (``torch.selu_``)."""
        return F.selu(input, inplace=True)

    def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
               training: bool = False, generator=None) -> Tensor:
        """In-place randomized leaky ReLU (``torch.rrelu_``)."""
        return F.rrelu_(input, lower, upper, training)

    def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
        """In-place threshold (``torch.threshold_``)."""
        return F.threshold(input, threshold, value, inplace=True)

    return {f.__name__: f for f in (dropout_, alpha_dropout_, feature_dropout_,
                                    feature_alpha_dropout_, celu_, selu_, rrelu_, threshold_)}


def _method_function(name: str) -> Callable:
    method = getattr(Tensor, name)

    def function(input: Tensor, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return method(input, *args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``input.{name}(...)`` as a function: {method.__doc__ or ''}"
    return function


def install(namespace: dict) -> list[str]:
    """Define the in-place functions microtorch has an op for in ``namespace`` (the
    ``microtorch`` module's globals); returns their names."""
    names = []
    for name in METHOD_NAMES:
        if hasattr(Tensor, name):
            namespace[name] = _method_function(name)
            names.append(name)
    for name, fn in _functional().items():
        namespace[name] = fn
        names.append(name)
    return names
