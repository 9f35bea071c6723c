"""Random benchmark inputs: ``Fuzzer`` draws parameters (``FuzzedParameter``), resamples until
the constraints hold, and builds tensors (``FuzzedTensor``) of the drawn sizes, strides and
memory orders.

Draws come from NumPy's ``RandomState(seed)`` in PyTorch's order, so a seed gives the same
parameter values, sizes, steps and memory orders as ``torch.utils.benchmark``; the tensors'
values come from microtorch's generator, seeded from the same stream. One deliberate
difference: PyTorch's check of a custom (dict) distribution is inverted (it rejects a
distribution that sums to one, and NumPy then rejects any other), so none works there; here a
dict whose probabilities sum to one is accepted and drawn from.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import microtorch as mt

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]

_DISTRIBUTIONS = ("loguniform", "uniform")


class FuzzedParameter:
    """A named parameter to draw: ``"loguniform"`` (integers, uniform in log space) or
    ``"uniform"`` (integers when both bounds are ints, else floats) between ``minval`` and
    ``maxval`` inclusive, or a dict ``{value: probability}``. A ``strict`` parameter is
    drawn once per step and kept while the others are resampled."""

    def __init__(
        self,
        name: str,
        minval: int | float | None = None,
        maxval: int | float | None = None,
        distribution: str | dict[Any, float] | None = None,
        strict: bool = False,
    ) -> None:
        self._name = name
        self._minval = minval
        self._maxval = maxval
        self._distribution = self._check_distribution(distribution)
        self.strict = strict

    @property
    def name(self) -> str:
        """The parameter's name (tensors' sizes may refer to it)."""
        return self._name

    def sample(self, state: np.random.RandomState) -> Any:
        """One value drawn from ``state``."""
        if self._distribution == "loguniform":
            return self._loguniform(state)
        if self._distribution == "uniform":
            return self._uniform(state)
        return self._custom_distribution(state)

    def _check_distribution(self, distribution: Any) -> Any:
        if not isinstance(distribution, dict):
            if distribution not in _DISTRIBUTIONS:
                raise AssertionError(f"Unknown distribution: {distribution}")
            return distribution
        if any(p < 0 for p in distribution.values()):
            raise AssertionError("Probabilities cannot be negative")
        if abs(sum(distribution.values()) - 1) > 1e-5:
            raise AssertionError("Distribution is not normalized")
        if self._minval is not None or self._maxval is not None:
            raise AssertionError("When passing a custom distribution, 'minval' and 'maxval' "
                                 "must be None")
        return distribution

    def _loguniform(self, state: np.random.RandomState) -> int:
        low = np.log2(self._minval) if self._minval is not None else None
        high = np.log2(self._maxval) if self._maxval is not None else None
        value = int(2 ** state.uniform(low=low, high=high))
        # 2 ** log2(x) can land a rounding error outside the bounds
        if self._minval is not None and value < self._minval:
            return self._minval
        if self._maxval is not None and value > self._maxval:
            return self._maxval
        return value

    def _uniform(self, state: np.random.RandomState) -> int | float:
        if isinstance(self._minval, int) and isinstance(self._maxval, int):
            return int(state.randint(low=self._minval, high=self._maxval + 1))
        return state.uniform(low=self._minval, high=self._maxval)

    def _custom_distribution(self, state: np.random.RandomState) -> Any:
        # Draw an index, not the keys themselves: NumPy would turn them into NumPy scalars.
        index = state.choice(np.arange(len(self._distribution)),
                             p=tuple(self._distribution.values()))
        return list(self._distribution)[index]


class ParameterAlias:
    """A parameter value that takes another parameter's value (for instance, in a custom
    distribution, a size that sometimes equals another size). Chains may not loop."""

    def __init__(self, alias_to: str) -> None:
        self.alias_to = alias_to

    def __repr__(self) -> str:
        return f"ParameterAlias[alias_to: {self.alias_to}]"


def dtype_size(dtype: mt.dtype) -> int:
    """Bytes per element of ``dtype``."""
    if dtype == mt.bool:
        return 1
    if dtype.is_floating_point or dtype.is_complex:
        return int(mt.finfo(dtype).bits / 8)
    return int(mt.iinfo(dtype).bits / 8)


def prod(values: Any, base: int = 1) -> int:
    """Product in Python integers: NumPy's could overflow into a negative size that passes
    the size limits."""
    return functools.reduce(lambda x, y: int(x) * int(y), values, base)


class FuzzedTensor:
    """A tensor to build each step. ``size`` and ``steps`` hold ints or parameter names;
    with ``steps`` a larger tensor is allocated and sliced (strided memory). The tensor is
    contiguous with probability ``probability_contiguous`` (else its memory is permuted).
    ``min_elements``, ``max_elements`` and ``max_allocation_bytes`` reject parameter sets;
    ``dim_parameter`` names a parameter that truncates (or pads with 1) the dimensions.
    ``tensor_constructor(size=, dtype=, **params)`` replaces the default values (uniform
    floats, or integers in [1, 127))."""

    def __init__(
        self,
        name: str,
        size: tuple[str | int, ...],
        steps: tuple[str | int, ...] | None = None,
        probability_contiguous: float = 0.5,
        min_elements: int | None = None,
        max_elements: int | None = None,
        max_allocation_bytes: int | None = None,
        dim_parameter: str | None = None,
        roll_parameter: str | None = None,
        dtype: mt.dtype = mt.float32,
        cuda: bool = False,
        tensor_constructor: Callable[..., mt.Tensor] | None = None,
    ) -> None:
        self._name = name
        self._size = size
        self._steps = steps
        self._probability_contiguous = probability_contiguous
        self._min_elements = min_elements
        self._max_elements = max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._dtype = dtype
        self._cuda = cuda
        self._tensor_constructor = tensor_constructor

    @property
    def name(self) -> str:
        """The tensor's name (its key in the generated dict)."""
        return self._name

    @staticmethod
    def default_tensor_constructor(size: tuple[int, ...], dtype: mt.dtype,
                                   **kwargs: Any) -> mt.Tensor:
        """Uniform [0, 1) floats, or integers in [1, 127), on the CPU."""
        if dtype.is_floating_point or dtype.is_complex:
            return mt.rand(size=size, dtype=dtype, device="cpu")
        return mt.randint(1, 127, size=size, dtype=dtype, device="cpu")

    def _make_tensor(self, params: dict[str, Any],
                     state: np.random.RandomState) -> tuple[mt.Tensor, dict[str, Any]]:
        size, steps, allocation_size = self._get_size_and_steps(params)
        constructor = self._tensor_constructor or self.default_tensor_constructor
        raw = constructor(size=allocation_size, dtype=self._dtype, **params)
        if self._cuda:
            raw = raw.cuda()
        # Non-contiguous memory: lay the tensor out in a random dimension order, then view it
        # back in the original order.
        dim = len(size)
        order = np.arange(dim)
        if state.rand() > self._probability_contiguous:
            while dim > 1 and np.all(order == np.arange(dim)):
                order = state.permutation(raw.dim())
            raw = raw.permute(tuple(int(i) for i in order)).contiguous()
            raw = raw.permute(tuple(int(i) for i in np.argsort(order)))
        tensor = raw[tuple(slice(0, n * step, step) for n, step in zip(size, steps))]
        properties = {"numel": int(tensor.numel()), "order": order, "steps": steps,
                      "is_contiguous": tensor.is_contiguous(), "dtype": str(self._dtype)}
        return tensor, properties

    def _get_size_and_steps(self, params: dict[str, Any]) -> tuple[tuple, tuple, tuple]:
        dim = params[self._dim_parameter] if self._dim_parameter is not None \
            else len(self._size)

        def resolve(values: tuple) -> tuple:
            concrete = tuple(params.get(v, v) for v in values)[:dim]
            return concrete + (1,) * (dim - len(concrete))

        size, steps = resolve(self._size), resolve(self._steps or ())
        return size, steps, tuple(n * s for n, s in zip(size, steps))

    def satisfies_constraints(self, params: dict[str, Any]) -> bool:
        """True when the sizes these parameters give are within the element and allocation
        limits."""
        size, _, allocation_size = self._get_size_and_steps(params)
        numel = prod(size)
        if numel < 0:
            raise AssertionError("Computed number of elements is negative")
        allocation_bytes = prod(allocation_size, base=dtype_size(self._dtype))

        def above(value: int | None, limit: int | None) -> bool:
            return value is not None and limit is not None and value > limit

        return not (above(numel, self._max_elements) or above(self._min_elements, numel)
                    or above(allocation_bytes, self._max_allocation_bytes))


class Fuzzer:
    """Generate benchmark inputs: ``take(n)`` yields ``n`` triples ``(tensors,
    tensor_properties, params)``. ``parameters`` and ``tensors`` may hold lists (flattened
    one level); ``constraints`` are callables given the parameter dict, and a
    set any of them rejects is drawn again. ``seed`` (random when None) fixes everything."""

    def __init__(
        self,
        parameters: list[FuzzedParameter | list[FuzzedParameter]],
        tensors: list[FuzzedTensor | list[FuzzedTensor]],
        constraints: list[Callable[..., bool]] | None = None,
        seed: int | None = None,
    ) -> None:
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2 ** 32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = Fuzzer._unpack(parameters, FuzzedParameter)
        self._tensors = Fuzzer._unpack(tensors, FuzzedTensor)
        self._constraints = constraints or ()
        overlap = {p.name for p in self._parameters} & {t.name for t in self._tensors}
        if overlap:
            raise ValueError(f"Duplicate names in parameters and tensors: {overlap}")
        self._rejections = 0
        self._total_generated = 0

    @staticmethod
    def _unpack(values: list, cls: type) -> tuple:
        return tuple(itertools.chain.from_iterable(
            [v] if isinstance(v, cls) else v for v in values))

    def take(self, n: int) -> Iterator[tuple[dict[str, mt.Tensor], dict[str, dict[str, Any]],
                                             dict[str, Any]]]:
        """Yield ``n`` steps of (tensors by name, their properties by name, parameters)."""
        state = np.random.RandomState(self._seed)
        mt.manual_seed(int(state.randint(low=0, high=2 ** 63, dtype=np.int64)))
        for _ in range(n):
            params = self._generate(state)
            tensors, properties = {}, {}
            for t in self._tensors:
                tensors[t.name], properties[t.name] = t._make_tensor(params, state)
            yield tensors, properties, params

    @property
    def rejection_rate(self) -> float:
        """The fraction of drawn parameter sets that were rejected."""
        return self._rejections / self._total_generated if self._total_generated else 0.0

    def _generate(self, state: np.random.RandomState) -> dict[str, Any]:
        strict: dict[str, Any] = {}
        for _ in range(1000):
            candidate: dict[str, Any] = {}
            for p in self._parameters:
                if p.strict and p.name in strict:
                    candidate[p.name] = strict[p.name]
                else:
                    candidate[p.name] = p.sample(state)
                    if p.strict:
                        strict[p.name] = candidate[p.name]
            candidate = self._resolve_aliases(candidate)
            self._total_generated += 1
            if all(f(candidate) for f in self._constraints) and all(
                    t.satisfies_constraints(candidate) for t in self._tensors):
                return candidate
            self._rejections += 1
        raise ValueError("Failed to generate a set of valid parameters.")

    @staticmethod
    def _resolve_aliases(params: dict[str, Any]) -> dict[str, Any]:
        params = dict(params)
        pending = sum(isinstance(v, ParameterAlias) for v in params.values())
        while pending:
            for k, v in params.items():
                if isinstance(v, ParameterAlias):
                    params[k] = params[v.alias_to]
            still = sum(isinstance(v, ParameterAlias) for v in params.values())
            if still == pending:
                raise ValueError(f"ParameterAlias cycle detected\n{params}")
            pending = still
        return params
