"""``default_collate`` (merge samples into a batch) and ``default_convert``, as in PyTorch."""

from __future__ import annotations

import collections.abc
import copy
import re
from typing import Any

import numpy as np

from ... import _dtype
from ..._tensor import Tensor
from ...ops.creation import as_tensor, from_numpy, tensor
from ...ops.shape import stack

__all__ = ["default_collate", "default_convert"]

# NumPy dtypes that cannot become tensors: byte/unicode strings and objects.
_STR_OBJ_DTYPE = re.compile(r"[SaUO]")
_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def _numpy_to_tensor(arr: np.ndarray) -> Tensor:
    if _STR_OBJ_DTYPE.search(arr.dtype.str):
        raise TypeError(_ERR.format(arr.dtype))
    return as_tensor(arr)


def default_collate(batch: list) -> Any:
    """Stack a list of samples into a batch, recursing into mappings and sequences.

    Tensors and NumPy arrays are stacked along a new first dimension; Python floats become a
    float64 tensor, ints an int64 one (bools a bool one); NumPy scalars keep their dtype;
    strings and bytes stay a list; a tuple or list of fields becomes a list of batched fields
    (a namedtuple stays a namedtuple); a dict becomes a dict of batched values.
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch, 0)
    if isinstance(elem, np.ndarray):
        return stack([_numpy_to_tensor(b) for b in batch], 0)
    if isinstance(elem, (np.bool_, np.number)):
        return from_numpy(np.array(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=_dtype.float64)
    if isinstance(elem, int):  # bool included: tensor() infers bool or int64 like PyTorch
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        merged = {key: default_collate([d[key] for d in batch]) for key in elem}
        if isinstance(elem, collections.abc.MutableMapping):
            try:  # keep the mapping's own type (OrderedDict, ...) when it can be copied
                clone = copy.copy(elem)
                clone.update(merged)
                return clone
            except TypeError:
                pass
        return merged
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        # A tuple sample (x, y) gives a list [X, Y], as in PyTorch.
        return [default_collate(list(samples)) for samples in zip(*batch)]
    raise TypeError(_ERR.format(type(elem)))


def default_convert(data: Any) -> Any:
    """Turn NumPy arrays (and scalars) inside ``data`` into tensors, without batching
    (the collate function when automatic batching is off, ``batch_size=None``)."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if _STR_OBJ_DTYPE.search(data.dtype.str) else as_tensor(data)
    if isinstance(data, (np.bool_, np.number)):
        return from_numpy(np.asarray(data))
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        return [default_convert(d) for d in data]
    return data
