"""Utilities, as in ``torch.utils``: ``data`` (datasets, samplers, DataLoader), ``dlpack``."""

from . import data, dlpack
from .memory import memory_report
