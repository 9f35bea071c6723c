"""Utilities, as in ``torch.utils``: ``data`` (datasets, samplers, DataLoader),
``checkpoint`` (activation checkpointing)."""

from . import checkpoint, data
from .memory import memory_report
