"""Utilities, as in ``torch.utils``: ``data`` (datasets, samplers, DataLoader),
``checkpoint`` (activation checkpointing), ``dlpack``."""

from . import _einops_hook, checkpoint, data, dlpack
from .memory import memory_report

_einops_hook.install()  # einops knows microtorch tensors once it is imported
