"""The OpInfo tier's pytest setting: the objects collection leaves (op_db, thousands of
parametrized items) are frozen out of the cyclic garbage collector, whose full passes would
otherwise walk them again and again while the tier makes and drops millions of small objects."""

from __future__ import annotations

import gc


def pytest_collection_finish(session) -> None:
    """Collect once, then freeze what is left (it lives until the session ends anyway)."""
    gc.collect()
    gc.freeze()
