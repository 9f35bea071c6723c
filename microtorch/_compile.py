"""``microtorch.compile``: there is no compiler; the model or function is returned unchanged.

PyTorch's ``torch.compile`` traces and compiles for speed with the same results, so giving
back the callable itself keeps a script's numbers. Works as ``compile(model)``, as
``@compile`` and as ``@compile(mode=..., fullgraph=...)``.
"""

from __future__ import annotations

_MODES = (None, "default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs",
          "max-autotune")


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor",  # noqa: A001
            mode=None, options=None, disable: bool = False):
    """``model`` itself (run eagerly); with no model, a decorator that returns its argument."""
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           + ", ".join(m for m in _MODES if m))
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    return model
