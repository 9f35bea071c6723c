"""PyTorch's complex OpInfo samples of every linear-algebra entry of ``op_db`` (``linalg.*``,
and ``svd``, ``qr``, ``pinverse``, ``logdet``, ``cholesky_solve``, ``cholesky_inverse``,
``lu_unpack``, ``matrix_exp``, ``cholesky``, ``lu``, ``lu_solve``, ``triangular_solve``,
``geqrf``, ``ormqr``): outputs and gradients against PyTorch (see ``_opinfo_linalg``).
complex128 checks forward and gradients, complex64 forward only. Their float32 and float64
samples run in the OpInfo tier (tests/opinfo), through the same gradcheck wrappers and
gauge-invariant outputs."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # torch.testing._internal needs it (the dev extra has it)
pytestmark = pytest.mark.torch

import _opinfo_linalg as runner  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ENTRIES = {runner.entry_id(op): op for op in runner.entries()}

# Entries whose samples microtorch does not pass, with the reason (none at present).
EXPECTED_FAILURES: dict[str, str] = {}


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_opinfo_samples(entry, dtype, device):
    if entry in EXPECTED_FAILURES:
        pytest.xfail(EXPECTED_FAILURES[entry])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecation warnings of torch.lu, torch.qr ...
        failures = runner.run_entry(ENTRIES[entry], dtype, device)
    assert not failures, "\n".join(f"sample {i}: {why}" for i, why in failures)


def test_every_linalg_entry_is_covered():
    names = {op.name for op in ENTRIES.values()}
    # PyTorch 2.13's op_db: 39 linalg.* names (44 entries with variants) and 14 top-level
    assert len([n for n in names if n.startswith("linalg.")]) == 39
    assert runner.TOPLEVEL <= names
    assert len(ENTRIES) == 58
