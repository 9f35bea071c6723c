"""A number where PyTorch requires a Tensor: the same TypeError as PyTorch's argument parser.

Every function of ``microtorch/ops/tensor_args_table.py`` is called with the number 2 at its
first listed parameter (Tensors before it) in both libraries: PyTorch raises its TypeError,
microtorch must raise the same one (exactly; for an overloaded function, PyTorch's message
without its per-call "didn't match" notes). The functions that take a number in PyTorch keep
taking it, and the table must be what ``tests/gen_tensor_args.py`` makes of the installed
PyTorch.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import microtorch as mt
import microtorch.nn.functional as mF
from microtorch.ops.deprecated_overloads import _BETA_FIRST as BETA_FIRST
from microtorch.ops.tensor_args_table import FUNCTIONS

torch = pytest.importorskip("torch")
tF = torch.nn.functional

ROOT = Path(__file__).resolve().parent.parent
DIDNT_MATCH = re.compile(r"^ {6}didn't match.*\n", re.M)
SPACES = {"torch": (torch, mt), "functional": (tF, mF)}
CASES = [(space, name) for space, entries in FUNCTIONS.items() for name, e in entries.items()
         if e[0] or e[2]]


def _error(fn, *args, **kwargs) -> str | None:
    try:
        fn(*args, **kwargs)
    except TypeError as e:
        return str(e)
    except Exception:  # noqa: BLE001 (only a TypeError is the parser's)
        return None
    return None


def _call(space: str, name: str, lib: int, number=2, keyword: bool = False):
    """The TypeError of ``name`` with ``number`` at its first listed parameter (torch: lib 0)."""
    params, _, with_out = FUNCTIONS[space][name]
    fn = getattr(SPACES[space][lib], name)
    t = (torch.tensor([1.0, 2.0]), mt.tensor([1.0, 2.0]))[lib]
    p, kw = (params or with_out)[0]
    kwargs = {} if params else {"out": (torch.empty(0), mt.empty(0))[lib]}
    before = [1] * p if name == "polygamma" else [t] * p  # (polygamma(n, input))
    # (addmm(2) alone reads as the deprecated addmm(beta, ...) in microtorch: give the operands)
    after = [t, t] if name in BETA_FIRST else []
    if keyword:
        return _error(fn, *before, *after, **{kw: number}, **kwargs)
    return _error(fn, *before, number, *after, **kwargs)


def test_the_table_covers_the_reported_functions():
    names = FUNCTIONS["torch"]
    for name in ("atan2", "maximum", "minimum", "eq", "lt", "copysign", "dist", "polar", "fmod",
                 "logical_and", "hypot", "lerp", "heaviside", "gcd", "remainder"):
        assert name in names, name
    assert len(names) > 300 and len(FUNCTIONS["functional"]) > 20
    for name in ("add", "sub", "mul", "div", "true_divide", "pow", "float_power", "xlogy"):
        assert name not in names


@pytest.mark.parametrize("space,name", CASES, ids=[f"{s}.{n}" for s, n in CASES])
def test_a_number_for_a_tensor_raises_pytorchs_type_error(space, name):
    want = _call(space, name, 0)
    assert want is not None, f"PyTorch takes the number: regenerate the table ({name})"
    got = _call(space, name, 1)
    assert got is not None, f"microtorch.{name} took a number PyTorch refuses"
    if "invalid combination" in want:
        assert got.startswith(f"{name}() received an invalid combination of arguments - got (")
    assert got == DIDNT_MATCH.sub("", want)


@pytest.mark.parametrize("call", ["atan2(2, t)", "atan2(t, 2.5)", "atan2(input=2, other=t)",
                                  "atan2(t, other=[1])", "atan2(2, other=2)", "fmod(2, t)",
                                  "fmod(input=2, other=t, out=t)", "fmod(2, other=t, out=t)",
                                  "remainder(2, t, out=t)", "where(t > 1, 2.0, t, out=t)",
                                  "maximum(np.float64(2), t)", "lerp(None, t, 0.5)",
                                  "hypot(True, t)", "eq((1, 2), t)", "gcd(t, 'a')"])
def test_other_values_and_keywords_read_as_pytorchs(call):
    want = _error(lambda: eval("L." + call, {"L": torch, "t": torch.tensor([1.0, 2.0]),
                                             "np": np}))
    got = _error(lambda: eval("L." + call, {"L": mt, "t": mt.tensor([1.0, 2.0]), "np": np}))
    assert want is not None and got == DIDNT_MATCH.sub("", want)


@pytest.mark.parametrize("call", ["add(2, t)", "sub(2, t)", "mul(2, t)", "div(2, t)",
                                  "true_divide(2, t)", "remainder(2, t)", "pow(2, t)",
                                  "float_power(2, t)", "xlogy(2, t)", "where(t > 1, 2.0, t)",
                                  "bitwise_left_shift(2, t.long())", "fmod(t, 2)",
                                  "clamp(t, 0.5, 1.5)", "lerp(t, t + 1, 0.5)",
                                  "add(t, 2, out=t.clone())", "remainder(t, 1.5)"])
def test_numbers_pytorch_takes_still_work(call):
    want = eval("L." + call, {"L": torch, "t": torch.tensor([1.0, 2.0])})
    got = eval("L." + call, {"L": mt, "t": mt.tensor([1.0, 2.0])})
    np.testing.assert_allclose(got.numpy(), want.numpy())


def test_tensors_and_parameters_pass():
    t = mt.tensor([1.0, 2.0])
    assert mt.maximum(mt.nn.Parameter(t), t).tolist() == [1.0, 2.0]
    assert mF.gelu(t).shape == (2,)


def test_the_table_is_what_the_generator_makes():
    spec = importlib.util.spec_from_file_location("gen_tensor_args",
                                                  ROOT / "tests" / "gen_tensor_args.py")
    gen = importlib.util.module_from_spec(spec)
    sys.modules["gen_tensor_args"] = gen
    spec.loader.exec_module(gen)
    table, signatures = gen.render(torch, gen.build(torch, mt))
    assert table == gen.TABLE.read_text(), "run tests/gen_tensor_args.py"
    assert signatures == gen.SIGS.read_text(), "run tests/gen_tensor_args.py"


BOOL_CALLS = ["narrow(t, 0, True, 1)", "narrow(t, True, 0, 1)", "narrow(t, 0, 0, length=True)",
              "select(t, 0, True)", "chunk(t, True)", "tril(t, True)", "triu(t, True)",
              "diag(t, True)", "repeat_interleave(t, True)", "histc(t, True)", "cumsum(t, True)",
              "flatten(t, True)", "select(t, 0, index=True)"]


@pytest.mark.parametrize("call", BOOL_CALLS)
def test_a_bool_for_an_int_raises_pytorchs_type_error(call):
    want = _error(lambda: eval("L." + call, {"L": torch, "t": torch.ones(3, 4)}))
    got = _error(lambda: eval("L." + call, {"L": mt, "t": mt.ones(3, 4)}))
    assert want is not None and got == DIDNT_MATCH.sub("", want)
