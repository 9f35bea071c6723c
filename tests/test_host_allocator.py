"""The host allocator setting (glibc thresholds) and the exactness of memory statistics with
freed buffers kept by the allocator for reuse."""

from __future__ import annotations

import subprocess
import sys

import pytest

import microtorch
from microtorch.backend import host_allocator


def test_thresholds_are_checked() -> None:
    with pytest.raises(ValueError, match="thresholds must be >= 0"):
        host_allocator.tune(-1, 0)
    with pytest.raises(ValueError, match="above glibc's maximum"):
        host_allocator.tune(host_allocator.MMAP_THRESHOLD + 1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_import_tunes_unless_opted_out() -> None:
    code = "import microtorch.backend.host_allocator as h, microtorch; print(h.tuned())"
    env_on = {"MICROTORCH_MALLOC_TUNE": "1", "PATH": "", "PYTHONPATH": "."}
    env_off = {"MICROTORCH_MALLOC_TUNE": "0", "PATH": "", "PYTHONPATH": "."}
    on = subprocess.run([sys.executable, "-c", code], env=env_on, capture_output=True,
                        text=True, check=True).stdout.strip()
    off = subprocess.run([sys.executable, "-c", code], env=env_off, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert (on, off) == ("True", "False")


def test_freed_buffers_kept_by_the_allocator_are_not_counted() -> None:
    """Buffers the allocator keeps for reuse are free: memory_allocated drops by exactly their
    size when the tensors go, and a new tensor of the same size (which reuses the memory)
    counts again."""
    base = microtorch.cpu.memory_allocated()
    a = microtorch.empty(1 << 20)  # 4 MiB
    b = microtorch.ones(256, 1024) * 2  # a result buffer of 1 MiB
    assert microtorch.cpu.memory_allocated() - base == (4 << 20) + (1 << 20)  # ones() freed
    del a, b
    assert microtorch.cpu.memory_allocated() == base
    c = microtorch.empty(1 << 20)
    assert microtorch.cpu.memory_allocated() - base == 4 << 20
    del c
    assert microtorch.cpu.memory_allocated() == base
