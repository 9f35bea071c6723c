"""Shared fixtures: the ``device`` fixture, and CI's rule that PyTorch tests may not skip.

Set ``MICROTORCH_REQUIRE_TORCH=1`` (CI does) and a test that would skip because PyTorch is
missing fails instead, so the oracle comparisons can never silently stop running.

``MICROTORCH_TEST_CUDA=standin`` runs the CUDA path without a GPU: ``import cupy`` then gives
the NumPy-backed CuPy stand-in of ``tests/cupy_standin`` (strict where CuPy is strict, kernels
on the CPU emulator, device->host syncs counted), so every test taking the ``device`` fixture
also runs on ``cuda``. CI runs that tier as ``pytest -m cuda`` (the cuda half of the fixture
and the tests marked ``cuda``). Without the switch, ``cuda`` runs only where CuPy sees a GPU.
"""

from __future__ import annotations

import importlib.util
import os
import re

# One BLAS/OpenMP thread per test process, set before NumPy and PyTorch load their thread pools.
# The tests' tensors are tiny: extra threads only spin, and with several pytest-xdist workers (or
# a busy machine) the spinning threads fight over the cores, several times the CPU time for
# the same results. A value already in the environment wins.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pytest  # noqa: E402

STANDIN = os.environ.get("MICROTORCH_TEST_CUDA", "") == "standin"
if os.environ.get("MICROTORCH_TEST_CUDA", "") not in ("", "standin"):
    raise pytest.UsageError(f"MICROTORCH_TEST_CUDA must be 'standin' or unset, got "
                            f"{os.environ['MICROTORCH_TEST_CUDA']!r}")
if STANDIN:  # before microtorch first probes for CUDA
    import cupy_standin

    cupy_standin.install()

import microtorch  # noqa: E402

CUDA_SKIP_REASON = "CUDA not available (needs CuPy and a GPU)"
_MENTIONS_TORCH = re.compile(r"(?<![a-z])torch\b", re.IGNORECASE)  # "torch" but not "microtorch"


def _torch_required() -> bool:
    return os.environ.get("MICROTORCH_REQUIRE_TORCH") == "1"


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def device(request) -> str:
    """Each test that takes ``device`` runs on the CPU and, when present, on the GPU."""
    if request.param == "cuda" and not microtorch.cuda.is_available():
        pytest.skip(CUDA_SKIP_REASON)
    return request.param


@pytest.fixture(autouse=True)
def _report_device_checks():
    """A failed device-side check (``Backend.check``) that a test left unreported fails that
    test, instead of surfacing at the next test's first synchronisation."""
    yield
    from microtorch.backend import initialized_backends

    for backend in initialized_backends():
        if backend.device.type == "cuda":
            backend.raise_failed_checks()


def pytest_sessionstart(session) -> None:
    if _torch_required() and importlib.util.find_spec("torch") is None:
        raise pytest.UsageError("MICROTORCH_REQUIRE_TORCH=1 but PyTorch is not installed: the "
                                "tests that compare against it would all skip")


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)


def _fail_torch_skip(report) -> None:
    """Turn a skip whose reason names PyTorch into a failure (under MICROTORCH_REQUIRE_TORCH)."""
    if _torch_required() and report.skipped and not hasattr(report, "wasxfail"):
        reason = _skip_reason(report)
        if _MENTIONS_TORCH.search(reason):
            report.outcome = "failed"
            report.longrepr = f"MICROTORCH_REQUIRE_TORCH=1 forbids this skip: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_torch_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    # A module-level pytest.importorskip("torch") skips at collection, not in a test.
    outcome = yield
    _fail_torch_skip(outcome.get_result())
