"""``torch.signal``: signal processing; its one namespace is ``windows``, the window functions
of ``torch.signal.windows`` (SciPy's ``scipy.signal.windows`` names and conventions)."""

from __future__ import annotations

from . import windows

__all__ = ["windows"]
