"""The orders PyTorch's CPU kernels give equal values: C++ standard-library algorithms as
libstdc++ implements them (``std::sort``, ``std::nth_element``, ``std::partial_sort``), and
the quickselect of PyTorch's ``kthvalue`` (Sedgewick's, from TH).

Sorting, top-k and k-th value are exact on distinct values whatever the algorithm; among equal
values the index order is whatever these algorithms leave, so ``sort(stable=False)``,
``topk`` and ``kthvalue`` replay them on the rows where equal values meet (the callers find
those rows vectorised). They work on Python lists of keys, ``(value is NaN, value)`` pairs
whose tuple order is PyTorch's (NaN above every number, NaNs equal to each other).
"""

from __future__ import annotations

import math

__all__ = ["keys", "sort", "nth_element", "partial_sort", "quick_select"]


def keys(values) -> list:
    """Comparison keys of a row (a sequence of numbers): NaN sorts above everything."""
    return [(True, 0.0) if isinstance(v, float) and math.isnan(v) else (False, v)
            for v in values]


# -- libstdc++ (bits/stl_algo.h, bits/stl_heap.h), on a list ``a`` with ``less(x, y)`` -----------
def _median_to_first(a, result, x, y, z, less) -> None:
    if less(a[x], a[y]):
        pick = y if less(a[y], a[z]) else z if less(a[x], a[z]) else x
    else:
        pick = x if less(a[x], a[z]) else z if less(a[y], a[z]) else y
    a[result], a[pick] = a[pick], a[result]


def _partition_pivot(a, first: int, last: int, less) -> int:
    _median_to_first(a, first, first + 1, first + (last - first) // 2, last - 1, less)
    pivot, lo, hi = a[first], first + 1, last
    while True:  # __unguarded_partition
        while less(a[lo], pivot):
            lo += 1
        hi -= 1
        while less(pivot, a[hi]):
            hi -= 1
        if not lo < hi:
            return lo
        a[lo], a[hi] = a[hi], a[lo]
        lo += 1


def _linear_insert(a, last: int, less) -> None:
    value, prev = a[last], last - 1
    while less(value, a[prev]):
        a[last] = a[prev]
        last, prev = prev, prev - 1
    a[last] = value


def _insertion_sort(a, first: int, last: int, less) -> None:
    for i in range(first + 1, last):
        if less(a[i], a[first]):
            value = a[i]
            a[first + 1:i + 1] = a[first:i]
            a[first] = value
        else:
            _linear_insert(a, i, less)


def _adjust_heap(a, first: int, hole: int, length: int, value, less) -> None:
    top = child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and less(a[first + parent], value):  # __push_heap
        a[first + hole] = a[first + parent]
        hole, parent = parent, (parent - 1) // 2
    a[first + hole] = value


def _pop_heap(a, first: int, last: int, result: int, less) -> None:
    value = a[result]
    a[result] = a[first]
    _adjust_heap(a, first, 0, last - first, value, less)


def _heap_select(a, first: int, middle: int, last: int, less) -> None:
    length = middle - first
    for parent in range((length - 2) // 2, -1, -1) if length > 1 else ():  # __make_heap
        _adjust_heap(a, first, parent, length, a[first + parent], less)
    for i in range(middle, last):
        if less(a[i], a[first]):
            _pop_heap(a, first, middle, i, less)


def partial_sort(a, first: int, middle: int, last: int, less) -> None:
    """``std::partial_sort``: a heap of the first ``middle - first``, then sorted."""
    _heap_select(a, first, middle, last, less)
    while middle - first > 1:  # __sort_heap
        middle -= 1
        _pop_heap(a, first, middle, middle, less)


def nth_element(a, first: int, nth: int, last: int, less) -> None:
    """``std::nth_element``: introselect, an insertion sort below 4 elements."""
    if first == last or nth == last:
        return
    depth = 2 * ((last - first).bit_length() - 1)
    while last - first > 3:
        if depth == 0:
            _heap_select(a, first, nth + 1, last, less)
            a[first], a[nth] = a[nth], a[first]
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, less)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(a, first, last, less)


def _introsort(a, first: int, last: int, depth: int, less) -> None:
    while last - first > 16:
        if depth == 0:
            partial_sort(a, first, last, last, less)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, less)
        _introsort(a, cut, last, depth, less)
        last = cut


def sort(a, first: int, last: int, less) -> None:
    """``std::sort``: introsort down to runs of 16, then one insertion sort."""
    if last - first < 2:
        return
    _introsort(a, first, last, 2 * ((last - first).bit_length() - 1), less)
    if last - first > 16:
        _insertion_sort(a, first, first + 16, less)
        for i in range(first + 16, last):
            _linear_insert(a, i, less)
    else:
        _insertion_sort(a, first, last, less)


# -- PyTorch's quickselect (aten/src/ATen/native/SortingUtils.h) ---------------------------------
def quick_select(a, k: int, greater) -> None:
    """Move the ``k``-th smallest (0-based) of ``a`` to position k, as PyTorch's kthvalue:
    a median-of-three pivot and Sedgewick's partition."""
    lo, hi = 0, len(a) - 1
    while hi > lo:
        if hi == lo + 1:
            if greater(a[lo], a[hi]):
                a[lo], a[hi] = a[hi], a[lo]
            return
        mid = (lo + hi) >> 1
        a[mid], a[lo + 1] = a[lo + 1], a[mid]
        if greater(a[lo + 1], a[hi]):
            a[lo + 1], a[hi] = a[hi], a[lo + 1]
        if greater(a[lo], a[hi]):
            a[lo], a[hi] = a[hi], a[lo]
        if greater(a[lo + 1], a[lo]):
            a[lo + 1], a[lo] = a[lo], a[lo + 1]
        i, j, pivot = lo + 1, hi, a[lo]
        while True:
            i += 1
            while greater(pivot, a[i]):
                i += 1
            j -= 1
            while greater(a[j], pivot):
                j -= 1
            if j < i:
                break
            a[i], a[j] = a[j], a[i]
        a[lo], a[j] = a[j], a[lo]
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1
