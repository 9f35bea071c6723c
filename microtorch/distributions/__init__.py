"""``microtorch.distributions``: probability distributions with PyTorch's API.

Sampling (``sample``/``rsample`` with ``sample_shape``), ``log_prob``, ``entropy``, moments,
``cdf``/``icdf``, ``expand``, argument and support validation with PyTorch's messages,
reparameterised gradients, transforms, and ``kl_divergence`` for the common pairs. On the CPU
the samples equal PyTorch's after the same ``manual_seed``.
"""

from .._module_aliases import alias_modules as _alias_modules
from . import (
    bernoulli,
    categorical,
    constraints,
    gamma,
    kl_cross,  # registers the cross-family pairs
    normal,
    transformed_distribution,
    transforms,
    uniform,
)
from .bernoulli import Bernoulli, Binomial
from .categorical import Categorical, OneHotCategorical
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Beta, Dirichlet, Gamma
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import LogNormal, Normal
from .poisson import Poisson
from .transformed_distribution import Independent, TransformedDistribution
from .transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    TanhTransform,
    Transform,
)
from .uniform import Exponential, Laplace, Uniform

__all__ = [
    "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "ComposeTransform",
    "Dirichlet", "Distribution", "ExpTransform", "Exponential", "ExponentialFamily",
    "Gamma", "Independent",
    "Laplace", "LogNormal", "MultivariateNormal", "Normal", "OneHotCategorical", "Poisson",
    "PowerTransform", "SigmoidTransform", "TanhTransform", "Transform",
    "TransformedDistribution", "Uniform", "constraints", "kl_divergence", "register_kl",
    "transforms",
]

# PyTorch has one module per distribution (``torch.distributions.beta``); here a family shares a
# module. Register PyTorch's module names for those, so ``from torch.distributions.beta import
# Beta`` imports from the family's module.
_alias_modules(__name__, {"beta": gamma, "dirichlet": gamma, "exponential": uniform,
                          "laplace": uniform, "binomial": bernoulli,
                          "one_hot_categorical": categorical,
                          "independent": transformed_distribution, "log_normal": normal})
