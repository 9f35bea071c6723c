"""``microtorch.return_types``: the named tuples that ops return (PyTorch's structseqs, e.g.
``torch.return_types.linalg_svd``), printed as PyTorch prints them: one field per line."""

from __future__ import annotations

from collections import namedtuple


def structseq(name: str, fields: list[str]) -> type:
    """A named tuple type ``name`` with ``fields``, registered in this module, whose repr is
    PyTorch's ``microtorch.return_types.name(\\nfield=value,\\n...)``."""

    def __repr__(self) -> str:
        body = ",\n".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"microtorch.return_types.{name}(\n{body})"

    cls = type(name, (namedtuple(name, fields),), {
        "__slots__": (), "__repr__": __repr__, "__module__": __name__,
        "__doc__": f"The result of ``{name}``: ({', '.join(fields)})."})
    globals()[name] = cls
    return cls
