"""From constraints to transforms: ``biject_to(c)`` is a bijection from unconstrained space onto
the set ``c`` (for HMC and the like, where the Jacobian matters); ``transform_to(c)`` is a map
onto ``c`` that need not be bijective (for optimising constrained parameters).

Both are ``ConstraintRegistry`` objects, looked up by the constraint's class, with PyTorch's
registrations; ``register`` adds more.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

from . import constraints, transforms
from . import structured_transforms as extra

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """A table from constraint classes to factories of transforms."""

    def __init__(self):
        self._registry: dict[type, Callable] = {}
        super().__init__()

    def register(self, constraint, factory: Callable | None = None):
        """Register ``factory(constraint) -> Transform`` for a ``Constraint`` subclass (or the
        class of a constraint object); without ``factory``, a decorator."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint,
                                                              constraints.Constraint):
            raise TypeError("Expected constraint to be either a Constraint subclass or "
                            f"instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint) -> transforms.Transform:
        """The transform registered for ``constraint``'s class, built for it."""
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _register_both(*constraint_list, bijective: bool = True, onto: bool = True):
    """Register one factory under both registries (or one of them) for each constraint."""
    def decorate(factory):
        for c in constraint_list:
            if bijective:
                biject_to.register(c, factory)
            if onto:
                transform_to.register(c, factory)
        return factory
    return decorate


@_register_both(constraints.real)
def _transform_to_real(constraint):
    return transforms.identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint):
    return extra.IndependentTransform(biject_to(constraint.base_constraint),
                                      constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint):
    return extra.IndependentTransform(transform_to(constraint.base_constraint),
                                      constraint.reinterpreted_batch_ndims)


@_register_both(constraints.positive, constraints.nonnegative)
def _transform_to_positive(constraint):
    return transforms.ExpTransform()


@_register_both(constraints.greater_than, constraints.greater_than_eq)
def _transform_to_greater_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.lower_bound, 1)])


@_register_both(constraints.less_than)
def _transform_to_less_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.upper_bound, -1)])


@_register_both(constraints.interval, constraints.half_open_interval)
def _transform_to_interval(constraint):
    lower, upper = constraint.lower_bound, constraint.upper_bound
    if (isinstance(lower, numbers.Number) and lower == 0
            and isinstance(upper, numbers.Number) and upper == 1):
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([transforms.SigmoidTransform(),
                                        transforms.AffineTransform(lower, upper - lower)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint):
    return extra.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint):
    return extra.SoftmaxTransform()


# As in PyTorch, no bijection is registered for lower_cholesky (the map is not one).
@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint):
    return extra.LowerCholeskyTransform()


@_register_both(constraints.positive_definite, constraints.positive_semidefinite,
                bijective=False)
def _transform_to_positive_definite(constraint):
    return extra.PositiveDefiniteTransform()


@_register_both(constraints.corr_cholesky)
def _transform_to_corr_cholesky(constraint):
    return extra.CorrCholeskyTransform()


@biject_to.register(constraints.cat)
def _biject_to_cat(constraint):
    return extra.CatTransform([biject_to(c) for c in constraint.cseq], constraint.dim,
                              constraint.lengths)


@transform_to.register(constraints.cat)
def _transform_to_cat(constraint):
    return extra.CatTransform([transform_to(c) for c in constraint.cseq], constraint.dim,
                              constraint.lengths)


@biject_to.register(constraints.stack)
def _biject_to_stack(constraint):
    return extra.StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


@transform_to.register(constraints.stack)
def _transform_to_stack(constraint):
    return extra.StackTransform([transform_to(c) for c in constraint.cseq], constraint.dim)
