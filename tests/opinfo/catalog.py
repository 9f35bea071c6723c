"""PyTorch's OpInfo database: the entries microtorch has a name for, and what PyTorch says of them.

``load()`` imports ``op_db`` from ``torch.testing._internal.common_methods_invocations``;
``matched()`` gives ``(entry id, OpInfo)`` for every entry whose name (or an alias) microtorch
has, ``missing()`` the ids of the others, ``cases()`` the ``(entry, OpInfo, dtype)`` triples the
tier runs. ``is_random`` and ``comparable`` read PyTorch's own marks on an op: the
``nondeterministic_seeded`` tag of its aten op, and the reasons its OpInfo gives for skipping
PyTorch's tests (``unittest.skip("...")`` inside ``DecorateInfo``).
"""

from __future__ import annotations

import functools

import porting
import torch

# The dtypes the tier runs, in this order, where the OpInfo supports them on the CPU.
DTYPES = (torch.float32, torch.float64, torch.uint8, torch.int8, torch.int16, torch.int32,
          torch.int64, torch.bool)


@functools.cache
def load() -> list:
    """PyTorch's op_db (needs torch and its test-time dependency expecttest)."""
    from torch.testing._internal.common_methods_invocations import op_db

    return list(op_db)


def entry_id(op) -> str:
    """``name`` or ``name.variant_test_name``: one OpInfo entry."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def find(entry: str):
    """The op_db entry whose ``entry_id`` is ``entry``."""
    return next(op for op in load() if entry_id(op) == entry)


# Entries also run in the complex dtypes (the OpInfo's complex samples): ops whose complex
# arithmetic is their own, not a float kernel run per part. (The linear-algebra entries' complex
# samples run in tests/_opinfo_linalg.py.) isclose and allclose once dropped the imaginary part
# unseen here; view_as_real has complex samples only.
COMPLEX_DTYPES = (torch.complex64, torch.complex128)
COMPLEX_ENTRIES = frozenset({"isclose", "allclose", "view_as_real"})


def tested_dtypes(op) -> list[torch.dtype]:
    """The dtypes of ``DTYPES`` the OpInfo lists as supported on the CPU, and for
    ``COMPLEX_ENTRIES`` those of ``COMPLEX_DTYPES``."""
    supported = op.supported_dtypes("cpu")
    wanted = DTYPES + (COMPLEX_DTYPES if entry_id(op) in COMPLEX_ENTRIES else ())
    return [d for d in wanted if d in supported]


def matched() -> list[tuple[str, object]]:
    """``(entry id, OpInfo)`` of the entries microtorch has a name for, in op_db's order."""
    return [(entry_id(op), op) for op in load() if porting.has_name(op)]


def missing() -> list[str]:
    """The entry ids of op_db microtorch has no name for."""
    return [entry_id(op) for op in load() if not porting.has_name(op)]


def cases() -> list[tuple[str, object, torch.dtype]]:
    """``(entry id, OpInfo, torch dtype)``: every matched entry in each dtype it is run in."""
    return [(eid, op, dt) for eid, op in matched() for dt in tested_dtypes(op)]


def skip_reasons(op, test_name: str | None = None) -> list[str]:
    """The reasons of the ``unittest.skip`` decorators the OpInfo puts on PyTorch's tests (on
    ``test_name`` only, when given), for any device or the CPU."""
    from torch.testing._internal.opinfo.core import DecorateInfo

    reasons = []
    for info in op.decorators:
        if not isinstance(info, DecorateInfo) or info.device_type not in (None, "cpu"):
            continue
        if test_name is not None and info.test_name != test_name:
            continue
        for dec in info.decorators:
            for cell in getattr(dec, "__closure__", None) or ():
                if isinstance(cell.cell_contents, str):
                    reasons.append(cell.cell_contents)
    return reasons


def is_random(op) -> bool:
    """The op draws random numbers: PyTorch tags its aten op ``nondeterministic_seeded``, or
    skips the op's CPU-vs-device comparison (``test_compare_cpu``) as non-deterministic."""
    packet = getattr(torch.ops.aten, op.aten_name.split(".")[-1], None)
    if packet is not None and any(torch.Tag.nondeterministic_seeded in getattr(packet, o).tags
                                  for o in packet.overloads()):
        return True
    return any("non-deterministic" in r for r in skip_reasons(op, "test_compare_cpu"))


def comparable(op) -> bool:
    """False where PyTorch's OpInfo says the op's output "is not comparable" (the ``empty``
    family: uninitialised memory); only shapes and dtypes are compared then."""
    return not any("not comparable" in r for r in skip_reasons(op))


# Entries whose outputs PyTorch defines only up to a gauge: singular vectors and eigenvectors
# are unique up to sign (a phase for complex ones), so two correct LAPACK builds may differ
# (torch.linalg.svd, eig, eigh docs). Their samples' ``output_process_fn_grad`` gives the
# gauge-invariant form (|U|, |V|, U @ Vh, eigenvalues with |eigenvectors|).
GAUGE_DEFINED = frozenset({"svd", "linalg.svd", "linalg.eig", "linalg.eigh",
                           # (an SVD of the projected matrix: U @ V^H and S compared)
                           "svd_lowrank", "pca_lowrank"})


def gauge_defined(op) -> bool:
    """The op's outputs are defined up to a gauge (:data:`GAUGE_DEFINED`)."""
    return entry_id(op) in GAUGE_DEFINED


def default_wrapper(op) -> bool:
    """The OpInfo differentiates its op as it is (no ``gradcheck_wrapper`` of its own)."""
    from torch.testing._internal.opinfo.core import OpInfo

    return op.gradcheck_wrapper is OpInfo.__dataclass_fields__["gradcheck_wrapper"].default


def made_for(sample, device: str) -> bool:
    """False for a sample, made for the CPU, that PyTorch's generator does not make for
    ``device``: ``linalg.lstsq`` with a driver other than ``gels`` (its CUDA samples use gels
    alone; PyTorch's CUDA lstsq refuses the others)."""
    return device == "cpu" or sample.kwargs.get("driver") in (None, "gels")
