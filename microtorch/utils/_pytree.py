"""Pytrees: nested tuples, lists, dicts (and OrderedDicts, namedtuples) of leaves, flattened
to a list of leaves and a ``TreeSpec`` that rebuilds the structure (PyTorch's
``torch.utils._pytree``, the part ``torch.func`` uses: ``None`` and every other non-container
value is a leaf, and specs print as PyTorch's)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_map",
           "tree_map_", "tree_structure", "broadcast_to_and_flatten"]


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _children(tree) -> tuple[type, Any, list] | None:
    """(node type, context, children) of a container node, None for a leaf."""
    kind = type(tree)
    if kind is tuple or kind is list:
        return kind, None, list(tree)
    if _is_namedtuple(tree):
        return kind, kind, list(tree)
    if kind is dict or kind is OrderedDict:
        keys = list(tree)
        return kind, keys, [tree[k] for k in keys]
    return None


class TreeSpec:
    """The structure of a pytree: the root's type, its context (a dict's keys, a
    namedtuple's class) and one spec per child."""

    __slots__ = ("type", "context", "children_specs", "num_leaves")

    def __init__(self, type: type | None, context: Any, children_specs: list) -> None:  # noqa: A002
        self.type = type
        self.context = context
        self.children_specs = children_specs
        self.num_leaves = 1 if type is None else sum(c.num_leaves for c in children_specs)

    @property
    def num_children(self) -> int:
        """The number of children of the root."""
        return len(self.children_specs)

    def is_leaf(self) -> bool:
        """True for the spec of a single leaf."""
        return self.type is None

    def __eq__(self, other) -> bool:
        if not isinstance(other, TreeSpec):
            return NotImplemented
        return (self.type is other.type and self.context == other.context
                and self.children_specs == other.children_specs)

    def __hash__(self) -> int:
        return hash((self.type, len(self.children_specs)))

    def __repr__(self, indent: int = 0) -> str:
        if self.type is None:
            return "*"
        name = "namedtuple" if self.type is self.context else self.type.__name__
        indent += 2
        parts = [c.__repr__(indent) for c in self.children_specs]
        body = (",\n" + " " * indent).join(parts)
        return f"TreeSpec({name}, {self.context}, [{body}])"

    def unflatten(self, leaves) -> Any:
        """The tree of this structure holding ``leaves`` (in flattening order)."""
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} "
                             f"but the spec refers to a pytree that holds {self.num_leaves} "
                             f"items ({self}).")
        return self._build(iter(leaves))

    def _build(self, it):
        if self.type is None:
            return next(it)
        values = [c._build(it) for c in self.children_specs]
        if self.type is tuple or self.type is list:
            return self.type(values)
        if self.context is self.type:  # namedtuple
            return self.type(*values)
        return self.type(zip(self.context, values))


class LeafSpec(TreeSpec):
    """The spec of a single leaf (prints as ``*``)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(None, None, [])


_LEAF = LeafSpec()


def tree_flatten(tree) -> tuple[list, TreeSpec]:
    """(the leaves of ``tree`` in order, its structure)."""
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves: list) -> TreeSpec:
    node = _children(tree)
    if node is None:
        leaves.append(tree)
        return _LEAF
    kind, context, children = node
    return TreeSpec(kind, context, [_flatten(c, leaves) for c in children])


def tree_unflatten(leaves, spec: TreeSpec) -> Any:
    """The tree of structure ``spec`` holding ``leaves``."""
    return spec.unflatten(leaves)


def tree_leaves(tree) -> list:
    """The leaves of ``tree``."""
    return tree_flatten(tree)[0]


def tree_structure(tree) -> TreeSpec:
    """The structure of ``tree``."""
    return tree_flatten(tree)[1]


def tree_map(fn: Callable, tree, *rests) -> Any:
    """``tree`` with every leaf replaced by ``fn(leaf, *matching leaves of rests)``."""
    leaves, spec = tree_flatten(tree)
    others = [_flatten_up_to(spec, r) for r in rests]
    return spec.unflatten(fn(*xs) for xs in zip(leaves, *others))


def tree_map_(fn: Callable, tree, *rests) -> Any:
    """Call ``fn`` on every leaf (with the matching leaves of ``rests``); returns ``tree``."""
    leaves, spec = tree_flatten(tree)
    others = [_flatten_up_to(spec, r) for r in rests]
    for xs in zip(leaves, *others):
        fn(*xs)
    return tree


def _flatten_up_to(spec: TreeSpec, tree) -> list:
    """The subtrees of ``tree`` at the leaves of ``spec`` (ValueError where they differ)."""
    out: list = []

    def walk(s: TreeSpec, t) -> None:
        if s.type is None:
            out.append(t)
            return
        node = _children(t)
        if node is None or node[0] is not s.type or node[1] != s.context:
            raise ValueError(f"Node type mismatch; expected {s.type}, but got {type(t)}.")
        if len(node[2]) != len(s.children_specs):
            raise ValueError(f"Node arity mismatch; expected {len(s.children_specs)}, but got "
                             f"{len(node[2])}.")
        for cs, ct in zip(s.children_specs, node[2]):
            walk(cs, ct)

    walk(spec, tree)
    return out


def broadcast_to_and_flatten(prefix, spec: TreeSpec) -> list | None:
    """``prefix`` (a tree whose structure is a prefix of ``spec``'s) with each of its leaves
    repeated for every leaf of ``spec`` below it, flattened; None when ``prefix`` does not
    fit ``spec`` (PyTorch's ``_broadcast_to_and_flatten``, as vmap's ``in_dims`` use it)."""
    full = spec.unflatten([0] * spec.num_leaves)
    out: list = []
    try:
        subtrees = _flatten_up_to(tree_structure(prefix), full)
    except ValueError:
        return None
    for value, sub in zip(tree_leaves(prefix), subtrees):
        out.extend([value] * tree_structure(sub).num_leaves)
    return out
