"""``microtorch.device``: where a tensor lives, parsed the way PyTorch parses it."""

from __future__ import annotations


class device:  # noqa: N801 - mirrors torch.device
    """A device kind (``"cpu"`` or ``"cuda"``) and, for CUDA, an index."""

    __module__ = "microtorch"  # its public name, as PyTorch's
    __slots__ = ("type", "index")

    def __init__(self, spec: str | device, index: int | None = None) -> None:
        if isinstance(spec, device):
            self.type, self.index = spec.type, spec.index
            return
        if not isinstance(spec, str):
            raise TypeError(f"device must be a string or microtorch.device, got {spec!r}")
        kind, _, number = spec.partition(":")
        if kind not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: "
                               f"{spec}")
        if number:
            if index is not None or not number.isdigit():
                raise RuntimeError(f"Invalid device string: '{spec}'")
            index = int(number)
        if kind == "cpu" and index not in (None, 0):
            raise RuntimeError(f"CPU device index must be 0 or absent, got {index}")
        self.type = kind
        self.index = None if kind == "cpu" else index

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (device, (str(self),))

    def __enter__(self) -> device:
        """``with microtorch.device("cuda"):`` makes this the default device inside."""
        _outer_defaults.append(_default)
        set_default_device(self)
        return self

    def __exit__(self, *exc) -> None:
        set_default_device(_outer_defaults.pop())


CPU = device("cpu")


_default: device | None = None  # where creation ops put tensors given no device (None: the CPU)
_outer_defaults: list[device | None] = []  # the defaults that ``with device(...)`` blocks hide


def set_default_device(spec) -> None:
    """Make creation ops and new layers without a ``device`` argument use ``spec`` (``"cuda"``
    follows the current GPU); None restores the CPU. Checked when a tensor is made, as in
    PyTorch: setting ``"cuda"`` on a machine without a GPU raises only then."""
    global _default
    _default = None if spec is None else (spec if isinstance(spec, device) else device(spec))
    if _default == CPU:
        _default = None


def default_device_spec() -> device | None:
    """The default device as set (None for the CPU; ``cuda`` without an index follows the
    current GPU: ``backend.canonical_device`` resolves it)."""
    return _default
