"""A namespace of named flags that refuses unknown names (as PyTorch's backend flag objects
do), so a typo in ``torch.backends.cuda.matmul.alow_tf32 = True`` is an error, not a no-op."""

from __future__ import annotations


class FlagNamespace:
    """Attributes fixed at creation; assigning or reading any other name raises."""

    def __init__(self, doc: str, **flags) -> None:
        object.__setattr__(self, "_names", frozenset(flags))
        object.__setattr__(self, "__doc__", doc)
        for name, value in flags.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value) -> None:
        if name not in self._names:
            raise AttributeError(f"Unknown attribute {name}")
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str):
        raise AttributeError(f"Unknown attribute {name}")

    def __repr__(self) -> str:
        flags = ", ".join(f"{n}={getattr(self, n)!r}" for n in sorted(self._names))
        return f"<flags {flags}>"
