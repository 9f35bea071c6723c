"""Autograd for views: in-place ops on views (PyTorch's CopySlices) and view regeneration.

A view op's output (``as_view``) records its root base tensor (``._base``, as in PyTorch).
Where the view lies inside its base is not stored: ``Strided.of`` reads it off the two arrays
when needed, as as_strided parameters over the base's elements, so chains of views cost
nothing extra.

- A recorded in-place op on a view computes out of place on a copy of the view (like every
  in-place op), writes the result into the shared storage, then (``rebase``) gives the base a
  new node ``CopySlices(base's old node, op's node)``: the base's gradient goes to the old
  node with the view's region zeroed, and the region's gradient goes to the op (and from
  there through the view's old node back into the base's old node). The view's node becomes
  ``AsStrided(CopySlices)``.
- Every other live view of that base is then out of date: the base's node is no longer the
  one it recorded (``_vnode``). Reading its ``grad_fn`` or ``requires_grad`` (as every op
  using it does) regenerates its node as ``AsStrided`` of the base's current node
  (``refresh``), PyTorch's rule. Until a process first changes the node of a base with live
  views (``track``), no view can be out of date: views stay plain Tensors and pay nothing.
- Views made under no_grad, and the outputs of split/chunk/unbind, cannot be rebased: PyTorch
  forbids it, with the same messages here.
"""

from __future__ import annotations

import gc
import sys

import numpy as np

from .._layout import SPARSE_DATA
from ..backend import xp_of
from ..backend.base import dense_order, root_buffer
from .grad_mode import recording
from .node import Node, finish

_NO_GRAD = ("no_grad", 0, None)  # the creation mark of a view made under no_grad


# -- where a view lies in its base ---------------------------------------------------------------
def _address(arr) -> int:
    return arr.__array_interface__["data"][0] if type(arr) is np.ndarray else arr.data.ptr


def _unsupported(why: str) -> RuntimeError:
    return RuntimeError(f"microtorch cannot record an in-place operation through this view: "
                        f"{why}. Use the out-of-place form or clone() the base first.")


def _strided(buf, shape: tuple, strides: tuple, offset: int):
    """An array over the 1-d contiguous ``buf`` (strides and offset in elements)."""
    item = buf.itemsize
    byte_strides = tuple(s * item for s in strides)
    if type(buf) is np.ndarray:
        return np.ndarray(shape, buf.dtype, buffer=buf, offset=offset * item,
                          strides=byte_strides)
    import cupy

    return cupy.ndarray(shape, buf.dtype, memptr=buf.data + offset * item, strides=byte_strides)


class Strided:
    """A view's place in its base: as_strided parameters (in elements) over the base's
    elements in memory order, i.e. the base's dimensions permuted (``perm``) to row-major.

    ``gather``, ``scatter`` and ``mask`` apply it to gradient arrays of any layout: the
    region of a base-shaped array, a base-shaped array of zeros holding a view-shaped one
    (summed over expanded dimensions), and a copy with the region zeroed.
    """

    __slots__ = ("shape", "strides", "offset", "expanded", "mshape", "perm", "inverse",
                 "numel")

    @classmethod
    def of(cls, arr, base) -> Strided:
        """The geometry of array ``arr`` inside array ``base`` (it must lie in it)."""
        if root_buffer(arr) is not root_buffer(base) or arr.dtype != base.dtype:
            raise _unsupported("it no longer shares storage with its base")
        item, shape = base.itemsize, base.shape
        geom = object.__new__(cls)
        geom.numel = base.size
        geom.perm = geom.inverse = None
        geom.mshape = shape
        if not base.flags.c_contiguous:
            # Dense in another order (a result laid out like a transposed input).
            perm = dense_order(base)
            if perm is None:
                raise _unsupported("its base's storage is not dense")
            geom.perm, geom.inverse = perm, tuple(int(i) for i in np.argsort(perm))
            geom.mshape = tuple(shape[d] for d in perm)
        offset = _address(arr) - _address(base)
        if offset % item or any(s % item for s in arr.strides):
            raise _unsupported("it is not aligned with its base's elements")
        geom.offset = offset // item
        geom.strides = tuple(s // item for s in arr.strides)
        geom.shape = arr.shape
        low = geom.offset + sum(s * (n - 1) for s, n in zip(geom.strides, arr.shape) if s < 0)
        high = geom.offset + sum(s * (n - 1) for s, n in zip(geom.strides, arr.shape) if s > 0)
        if low < 0 or high >= geom.numel:
            raise _unsupported("it does not lie inside its base")
        geom.expanded = tuple(i for i, (s, n) in enumerate(zip(geom.strides, arr.shape))
                              if s == 0 and n > 1)
        return geom

    def _buffer(self, g, copy: bool):
        """Base-shaped ``g`` as a 1-d contiguous array in the base's memory order."""
        m = g if self.perm is None else g.transpose(self.perm)
        xp = np if type(g) is np.ndarray else xp_of(g)
        m = m.copy(order="C") if copy else xp.ascontiguousarray(m)
        return m.reshape(-1)

    def _unbuffer(self, buf):
        out = buf.reshape(self.mshape)
        return out if self.perm is None else out.transpose(self.inverse)

    def gather(self, g):
        """The view's region of the base-shaped array ``g``."""
        return _strided(self._buffer(g, False), self.shape, self.strides, self.offset)

    def scatter(self, gv):
        """Zeros of the base's shape with the view-shaped ``gv`` added at the view's place."""
        xp = np if type(gv) is np.ndarray else xp_of(gv)
        buf = xp.zeros(self.numel, dtype=gv.dtype)
        shape = self.shape
        if self.expanded:  # several view elements share one base element: their sum lands
            gv = gv.sum(axis=self.expanded, keepdims=True)
            shape = gv.shape
        _strided(buf, shape, self.strides, self.offset)[...] = gv
        return self._unbuffer(buf)

    def mask(self, g):
        """A copy of the base-shaped ``g`` with the view's region set to zero."""
        buf = self._buffer(g, True)
        _strided(buf, self.shape, self.strides, self.offset)[...] = 0
        return self._unbuffer(buf)


_ADJOINT = {"gather": "scatter", "scatter": "gather", "mask": "mask"}


def _apply_strided(geom: Strided, mode: str, grad):
    """``geom.<mode>`` of a raw gradient array, or recorded on a Tensor (create_graph)."""
    if isinstance(grad, Tensor):
        return StridedCopy.apply(grad, geom, mode)
    return getattr(geom, mode)(grad)


class StridedCopy(Node):
    """gather / scatter / mask as a differentiable op (the backward of the nodes below under
    ``create_graph``); each is linear, with gather and scatter each other's adjoint."""

    lifted = True

    @staticmethod
    def forward(ctx, g, geom, mode):
        ctx.geom, ctx.mode = geom, mode
        return getattr(geom, mode)(g._data)

    @staticmethod
    def backward(ctx, grad):
        return finish(_apply_strided(ctx.geom, _ADJOINT[ctx.mode], grad), None, None)


class CopySlices(Node):
    """The node of a base written through a view: edges (base's old node, the op's node)."""

    lifted = True

    def name(self) -> str:
        return "torch::autograd::CopySlices"

    def __repr__(self) -> str:
        return f"<CopySlices object at {id(self):#x}>"

    @staticmethod
    def backward(ctx, grad):
        geom = ctx.geom
        untouched = None if ctx._next[0] is None else _apply_strided(geom, "mask", grad)
        return finish(untouched, _apply_strided(geom, "gather", grad))


class AsStrided(Node):
    """The node of a view taken from its base's current node (edge: the base)."""

    lifted = True

    @staticmethod
    def backward(ctx, grad):
        return finish(_apply_strided(ctx.geom, "scatter", grad))


# -- creating views ------------------------------------------------------------------------------
def as_view(out: Tensor, base: Tensor) -> Tensor:
    """Mark a view op's output as a view of ``base``'s storage: the shared version counter,
    the root base, and (when not the default) how it was made."""
    arr = out._data
    if arr.size and type(arr) not in SPARSE_DATA and xp_of(arr).may_share_memory(arr,
                                                                                base._data):
        if type(arr) is np.ndarray and not arr.flags.writeable and base._data.flags.writeable:
            # NumPy makes some views read-only (broadcast_to, diagonal); a PyTorch view writes
            # through to its base, and the in-place ops refuse the overlapping writes.
            arr.flags.writeable = True
        out._vbox = base._vbox
        if base._inference or out._inference:  # a view is an inference tensor when its base
            out._inference = base._inference  # is one (made inside the mode or not)
        root = base._base
        if root is None:
            out._base = root = base
            meta = None
        else:
            out._base = root
            meta = base._vmeta
        if not recording():
            out._vmeta = _NO_GRAD
        elif meta is not None:  # a view of a no_grad / multi-output view inherits the mark
            out._vmeta = (meta[0], 0, None)
        if _tracking:
            out._vnode = root.grad_fn
            out.__class__ = _View
    return out


def mark_multi_output(views, name: str) -> tuple:
    """Mark the outputs of split/chunk/unbind, whose in-place modification PyTorch forbids."""
    if recording():
        for i, v in enumerate(views):
            if v._base is not None:
                v._vmeta = ("multi", i, name)
    return tuple(views)


# -- in-place ops on views -----------------------------------------------------------------------
def _node_name(node) -> str:
    return node.name().removesuffix("Backward0")


def _creation_error(view: Tensor, meta: tuple, direct: bool) -> RuntimeError:
    """PyTorch's words for rebasing a view made under no_grad or by a multi-output op."""
    kind, index, name = meta
    node = _GRAD_FN.__get__(view)
    modified = "is being" if direct else "its base or another view of its base has been"
    if kind == "no_grad" or node is None:
        prefix = ("A view was created in" if node is None else
                  f"Output {index} of {_node_name(node)} is a view of a view which was created in")
        msg = f"{prefix} no_grad mode and {modified} modified inplace with grad mode enabled."
    else:
        msg = (f"Output {index} of {name or _node_name(node)} is a view and {modified} modified "
               f"inplace.")
    if kind == "multi":
        return RuntimeError(msg + " This view is the output of a function that returns multiple "
                            "views. Such functions do not allow the output views to be modified "
                            "inplace. You should replace the inplace operation by an out-of-place "
                            "one.")
    return RuntimeError(msg + " Given that this use case is ambiguous and error-prone, it is "
                        "forbidden. You can clarify your code by moving both the view and the "
                        "inplace either both inside the no_grad block (if you don't want the "
                        "inplace to be tracked) or both outside (if you want the inplace to be "
                        "tracked).")


def check_inplace(view: Tensor, others: tuple) -> bool:
    """Raise for in-place ops on ``view`` that cannot be recorded; True when one must be
    (called with grad mode on)."""
    base = view._base
    if not (view.requires_grad or base.requires_grad or any(
            isinstance(o, Tensor) and o.requires_grad for o in others)):
        return False
    meta = view._vmeta
    if meta is not None:
        raise _creation_error(view, meta, True)
    if (view.requires_grad and view.grad_fn is None) or (base.requires_grad
                                                         and base.grad_fn is None):
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    return True


def retarget(t: Tensor, node: Node) -> None:
    """Make ``node`` the graph node of ``t`` (which now holds the node's result), moving a
    ``retain_grad()`` of ``t`` along with it."""
    old = _GRAD_FN.__get__(t)
    if old is not None and old._retained is not None and old._retained() is t:
        node._retained, old._retained = old._retained, None
    _GRAD_FN.__set__(t, node)
    _REQUIRES_GRAD.__set__(t, True)


def _new_node(cls, edges: tuple, geom: Strided) -> Node:
    node = cls._make_node(edges)
    node.geom = geom
    return node


def rebase(view: Tensor, geom: Strided, node: Node) -> None:
    """After ``node``'s result was written into ``view``: record it on the base and the view."""
    track()
    base = view._base
    copy = _new_node(CopySlices, (base.grad_fn, node), geom)
    retarget(base, copy)
    retarget(view, _new_node(AsStrided, (copy,), geom))
    view._vnode = copy


def refresh(view: Tensor, reading_grad_fn: bool) -> None:
    """Bring a view whose base's graph changed (by an in-place op) up to date with it."""
    base = view._base
    if not base.requires_grad:
        view._vnode = base.grad_fn
        return
    meta = view._vmeta
    if meta is not None:  # stays out of date: using it for gradients raises, as in PyTorch
        _REQUIRES_GRAD.__set__(view, True)
        if reading_grad_fn and recording():
            raise _creation_error(view, meta, False)
        return
    geom = Strided.of(view._data, base._data)
    node = base.grad_fn
    retarget(view, _new_node(AsStrided, (node or base,), geom))
    view._vnode = node


def _checked(slot, reading_grad_fn: bool):
    """A getter of ``slot`` that first brings an out-of-date view up to date."""
    get = slot.__get__

    def getter(self):
        if self._base.grad_fn is not self._vnode:
            refresh(self, reading_grad_fn)
        return get(self)

    return getter


_tracking = False


def track() -> None:
    """Make views check that they are up to date (once per process).

    Called before the first change of a graph node that live views may have recorded: a
    recorded in-place op on a view, or on a tensor whose version counter is shared. Until
    then no view can be out of date, so views stay plain Tensors (one class at every
    attribute read keeps Python's specialized lookups fast); from then on they are ``_View``s,
    whose ``grad_fn`` and ``requires_grad`` are checking properties. The views alive now are
    found with a census of the garbage collector's objects, as ``_memory`` does.
    """
    global _tracking
    if _tracking:
        return
    _tracking = True
    _View.grad_fn = property(_checked(_GRAD_FN, True), _GRAD_FN.__set__, doc="The node that "
                             "produced this view (regenerated after its base's graph changed).")
    _View.requires_grad = property(_checked(_REQUIRES_GRAD, False), _REQUIRES_GRAD.__set__,
                                   doc="Whether gradients flow through this view.")
    for obj in gc.get_objects():
        if type(obj) is Tensor and obj._base is not None:
            # Its base's node has not changed since the view was made (or we would be here
            # already), so the node it has now is the one its own node was built on.
            obj._vnode = obj._base.grad_fn
            obj.__class__ = _View


def _sole_box_refs() -> int:
    """What sys.getrefcount reports for a tensor's version counter that nothing shares."""
    t = Tensor._make(np.zeros(1))
    return sys.getrefcount(t._vbox)


def set_node(t: Tensor, node: Node) -> None:
    """``retarget`` for a recorded in-place op on ``t`` (not a view): its live views (they
    share its version counter) recorded its old node, so views start checking first."""
    if sys.getrefcount(t._vbox) > _SOLE_BOX_REFS:
        track()
    retarget(t, node)


from .._tensor import _GRAD_FN, _REQUIRES_GRAD, Tensor, _View  # noqa: E402  (cycle)

_SOLE_BOX_REFS = _sole_box_refs()

# A view is a Tensor to anything that prints or names its class (error messages, reprs).
_View.__name__ = _View.__qualname__ = "Tensor"
_View.__module__ = Tensor.__module__
