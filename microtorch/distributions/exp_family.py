"""``ExponentialFamily``: distributions with density exp(<t(x), theta> - F(theta) + k(x)).

Given the natural parameters theta (``_natural_params``) and the log normaliser F
(``_log_normalizer``), the entropy and the KL divergence between two members of one family
follow from F's gradient (the Bregman divergence of F), computed here with autograd.
"""

from __future__ import annotations

from ..autograd import grad as _grad
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base class of exponential-family distributions (Normal, Gamma, Bernoulli, ...)."""

    @property
    def _natural_params(self) -> tuple:
        """The natural parameters, as a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """The log normaliser F of the natural parameters."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """E[k(x)], the expected carrier measure (needed for the entropy)."""
        raise NotImplementedError

    def entropy(self):
        """F(theta) - <theta, grad F(theta)> - E[k(x)]."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = _grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for param, g in zip(nparams, gradients):
            result = result - (param * g).reshape(*self._batch_shape, -1).sum(-1)
        return result


def bregman_kl(p: ExponentialFamily, q: ExponentialFamily):
    """KL(p || q) of two members of one exponential family: the Bregman divergence of F."""
    if type(p) is not type(q):
        # PyTorch's message, with the run of spaces its source's line continuation leaves
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot" + " " * 29 + "be computed using Bregman "
                                  "divergences")
    from .utils import sum_rightmost

    p_nparams = [param.detach().requires_grad_() for param in p._natural_params]
    q_nparams = q._natural_params
    lg_normal = p._log_normalizer(*p_nparams)
    gradients = _grad(lg_normal.sum(), p_nparams)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        result = result - sum_rightmost((qnp - pnp) * g, len(q.event_shape))
    return result
