"""Utilities, as in ``torch.utils``: ``data`` (datasets, samplers, DataLoader)."""

from . import data
from .memory import memory_report
