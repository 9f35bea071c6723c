"""Out-of-memory on the GPU: an allocation past the pool's limit raises
``microtorch.cuda.OutOfMemoryError`` (a RuntimeError, as PyTorch's ``torch.cuda.OutOfMemoryError``)
with PyTorch's message, from any op, before the op writes anything (the CUDA stand-in tier)."""

from __future__ import annotations

import re

import pytest

import microtorch as torch

pytestmark = pytest.mark.cuda


@pytest.fixture
def limited():
    """The current GPU's pool capped at 1 MiB for the test (no cap afterwards)."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA")
    import cupy

    torch.zeros(1, device="cuda")  # (CUDA state, and microtorch's allocator, set up)
    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    pool.set_limit(size=2**20)
    yield pool
    pool.set_limit(size=0)


def test_too_large_a_tensor_raises_pytorchs_error(limited):
    with pytest.raises(torch.cuda.OutOfMemoryError) as info:
        torch.empty(2**20, device="cuda")  # 4 MiB
    assert isinstance(info.value, RuntimeError) and not isinstance(info.value, MemoryError)
    assert torch.cuda.OutOfMemoryError is torch.OutOfMemoryError
    message = str(info.value)
    assert message.startswith("CUDA out of memory. Tried to allocate 4.00 MiB. GPU 0 has a "
                              "total capacity of ")
    assert re.search(r"of which \d+\.\d\d GiB is free\. Including non-PyTorch memory, this "
                     r"process has [\d.]+ \w+ memory in use\. Of the allocated memory "
                     r"[\d.]+ \w+ is allocated by PyTorch, with 1\.00 MiB allowed; and", message)
    assert "is reserved by PyTorch but unallocated." in message


def test_user_code_catches_it_and_state_is_untouched(limited):
    x = torch.ones(64, device="cuda")
    try:
        x.expand(2**18, 64).contiguous()  # 64 MiB from an op
    except torch.cuda.OutOfMemoryError:
        caught = True
    assert caught
    assert torch.equal(x.cpu(), torch.ones(64))
    y = torch.ones(64, device="cuda", requires_grad=True)
    with pytest.raises(torch.cuda.OutOfMemoryError):
        (y.unsqueeze(0) * torch.ones(2**18, 1, device="cuda")).sum().backward()
    assert y.grad is None  # nothing accumulated


def test_set_per_process_memory_fraction(limited):
    limited.set_limit(size=0)
    torch.cuda.set_per_process_memory_fraction(0.0)
    try:
        with pytest.raises(torch.cuda.OutOfMemoryError, match="CUDA out of memory"):
            torch.randn(1024, device="cuda")
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
    torch.randn(1024, device="cuda")  # fits again
