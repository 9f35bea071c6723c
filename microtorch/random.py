"""Seeding and generator state: ``manual_seed`` seeds the CPU stream and every GPU's."""

from __future__ import annotations

import contextlib
import warnings

from .backend import initialized_backends
from .backend.cupy_backend import queue_seed
from .backend.rng import Generator, default_generator

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "fork_rng"]

_fork_rng_warned_already = False


def manual_seed(seed: int) -> Generator:
    """Seed every device's random number generator; returns the CPU generator."""
    seed = int(seed)
    default_generator.manual_seed(seed)
    queue_seed(seed)  # GPUs whose backend is created later start from this seed too
    for backend in initialized_backends():
        if backend.device.type == "cuda":
            backend.manual_seed(seed)
    return default_generator


def seed() -> int:
    """Seed from a nondeterministic source; returns the seed."""
    s = default_generator.seed()
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed of the CPU generator."""
    return default_generator.initial_seed()


def get_rng_state():
    """The CPU generator's state as a uint8 tensor."""
    from .ops.creation import from_numpy

    return from_numpy(default_generator.get_state())


def set_rng_state(new_state) -> None:
    """Restore the CPU generator from ``get_rng_state()``."""
    import numpy as np

    default_generator.set_state(np.asarray(new_state))


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str | None = None):
    """Context manager: the CPU generator's state, and that of each GPU in ``devices`` (every
    GPU when None, with PyTorch's warning when there are several), are restored on exit."""
    if device_type == "meta":
        yield
        return
    device_type = device_type or "cuda"
    if device_type not in ("cuda", "cpu"):
        raise RuntimeError(f"torch has no module of `{device_type}`, you should register a "
                           f"module by `torch._register_device_module`.")
    if not enabled:
        yield
        return
    from . import cuda

    if device_type == "cpu":
        devices = []
    elif devices is None:
        global _fork_rng_warned_already
        count = cuda.device_count()
        if count > 1 and not _fork_rng_warned_already:
            kind = device_type.upper()
            warnings.warn(
                f"{kind} reports that you have {count} available devices, and you have used "
                f"{_caller} without explicitly specifying which devices are being used. For "
                f"safety, we initialize *every* {kind} device by default, which can be quite "
                f"slow if you have a lot of {kind}s. If you know that you are only making use "
                f"of a few {kind} devices, set the environment variable {kind}_VISIBLE_DEVICES "
                f"or the '{_devices_kw}' keyword argument of {_caller} with the set of devices "
                f"you are actually using. For example, if you are using CPU only, set "
                f"device.upper()_VISIBLE_DEVICES= or devices=[]; if you are using device 0 "
                f"only, set {kind}_VISIBLE_DEVICES=0 or devices=[0].  To initialize all "
                f"devices and suppress this warning, set the '{_devices_kw}' keyword argument "
                f"to `range(torch.{device_type}.device_count())`.", stacklevel=3)
            _fork_rng_warned_already = True
        devices = list(range(count))
    else:
        devices = list(devices)
    cpu_state = get_rng_state()
    device_states = [cuda.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, state in zip(devices, device_states):
            cuda.set_rng_state(state, d)
