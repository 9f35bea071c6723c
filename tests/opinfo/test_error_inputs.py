"""PyTorch's ``error_inputs`` as the oracle of bad input: where PyTorch raises, microtorch raises.

An OpInfo's ``error_inputs`` are samples on which PyTorch's op must raise a given exception
class (and message). For every entry microtorch has a name for, each such sample converted to
microtorch must raise the same class (or a subclass) on the CPU: a bad input that returns is
the silent wrong answer this tier exists to catch, and another class is an unclear error.

Samples whose exception is the bare ``Exception`` with no message are PyTorch's argument
parser refusing a Python number where its schema wants a tensor (``atan2(t, 2)``); microtorch
takes a number in more places than that parser does (``docs/semantics.md``), so those are not
compared. ``UNCHECKED`` lists the rest that still differ, each with its reason; like
``expected_failures.py`` it is strict: a listed sample that raises as PyTorch does fails the
test until it is removed.
"""

from __future__ import annotations

import importlib.util
import warnings

import pytest

_HAVE = all(importlib.util.find_spec(m) is not None for m in ("torch", "expecttest"))

# (entry, error-input index) -> why microtorch does not raise PyTorch's exception there
_NO_OUT = "microtorch's function has no out= form (a TypeError names the keyword)"
_ALIAS = ("the sample's out= aliases an input, and the conversion copies each tensor, so the "
          "alias does not reach microtorch (tests/test_tensor_bad_inputs.py builds it there)")
UNCHECKED: dict[tuple[str, int], str] = {
    ("bernoulli", 0): _NO_OUT, ("multinomial", 2): _NO_OUT,
    ("gather", 5): _ALIAS, ("gather", 7): _ALIAS, ("index_select", 0): _ALIAS,
    ("masked_select", 0): _ALIAS, ("cat", 0): _ALIAS, ("cat", 8): _ALIAS,
    ("take", 0): _ALIAS, ("take", 2): _ALIAS,
}

if _HAVE:
    import catalog
    import oracle
    import porting

    ENTRIES = [pytest.param(op, id=eid) for eid, op in catalog.matched()
               if op.error_inputs_func is not None]
else:
    ENTRIES = [pytest.param(None, id="op_db")]


def _error_inputs(op) -> list:
    oracle._seed_all(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(op.error_inputs("cpu"))


def _outcome(fn, ei):
    """None when microtorch raises ``ei``'s class, else what it did instead."""
    s = ei.sample_input
    try:
        args = porting.to_mt((s.input, list(s.args), dict(s.kwargs)), "cpu", {})
    except Exception:  # noqa: BLE001 (a meta tensor, a 65-d array: nothing NumPy can hold)
        return None
    m_in, m_args, m_kwargs = args
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(m_in, *m_args, **m_kwargs)
    except ei.error_type:
        return None
    except Exception as e:  # noqa: BLE001 (any other class is the finding)
        return f"{type(e).__name__}: {str(e)[:120]}"
    return "returned"


@pytest.mark.torch
@pytest.mark.parametrize("op", ENTRIES)
def test_error_inputs_raise_pytorchs_exception(op):
    if op is None:
        pytest.skip("torch.testing._internal's op_db (torch and expecttest) is not importable")
    eid = catalog.entry_id(op)
    fn = porting.op_function(op)
    found, fixed = [], []
    for i, ei in enumerate(_error_inputs(op)):
        if ei.error_type is Exception and not ei.error_regex:
            continue  # PyTorch's parser refusing a number for a tensor (module docstring)
        got = _outcome(fn, ei)
        listed = (eid, i) in UNCHECKED
        if got is not None and not listed:
            found.append(f"error input {i}: PyTorch raises {ei.error_type.__name__} "
                         f"({ei.error_regex!r}); microtorch: {got}")
        elif got is None and listed:
            fixed.append(f"error input {i} raises as PyTorch does now: remove it from UNCHECKED")
    assert not found and not fixed, "\n".join(found + fixed)


def test_unchecked_names_only_existing_entries():
    if not _HAVE:
        pytest.skip("torch.testing._internal's op_db is not importable")
    known = {catalog.entry_id(op) for op in catalog.load()}
    assert not [e for e, _ in UNCHECKED if e not in known]
