"""Utilities, as in ``torch.utils``: ``data`` (datasets, samplers, DataLoader),
``checkpoint`` (activation checkpointing), ``dlpack``, ``hooks``, ``deterministic``,
``flop_counter`` (``FlopCounterMode``) and ``module_tracker``."""

from . import (
    _einops_hook,
    checkpoint,
    data,
    deterministic,
    dlpack,
    flop_counter,
    hooks,
    module_tracker,
)
from .memory import memory_report

_einops_hook.install()  # einops knows microtorch tensors once it is imported
