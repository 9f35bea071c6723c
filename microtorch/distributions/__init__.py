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
    circular,
    constraint_registry,
    constraints,
    discrete,
    extreme_value,
    folded,
    gamma,
    gamma_derived,
    heavy_tailed,
    kl_cross,  # registers the cross-family pairs
    kl_univariate,  # registers the pairs of the families below (after kl_cross)
    logistic_normal,
    matrix_distributions,
    mixture,
    normal,
    relaxed,
    structured_transforms,
    transformed_distribution,
    transforms,
    uniform,
    unit_interval,
)
from .bernoulli import Bernoulli, Binomial
from .categorical import Categorical, OneHotCategorical, OneHotCategoricalStraightThrough
from .circular import VonMises
from .constraint_registry import biject_to, transform_to
from .discrete import Geometric, Multinomial, NegativeBinomial
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .extreme_value import Gumbel, Weibull
from .folded import HalfCauchy, HalfNormal
from .gamma import Beta, Dirichlet, Gamma
from .gamma_derived import Chi2, FisherSnedecor, InverseGamma
from .heavy_tailed import Cauchy, GeneralizedPareto, Pareto, StudentT
from .kl import kl_divergence, register_kl
from .logistic_normal import LogisticNormal
from .matrix_distributions import LKJCholesky, LowRankMultivariateNormal, Wishart
from .mixture import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .normal import LogNormal, Normal
from .poisson import Poisson
from .relaxed import RelaxedBernoulli, RelaxedOneHotCategorical
from .structured_transforms import (
    AbsTransform,
    CatTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    ReshapeTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    identity_transform,
)
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
from .unit_interval import ContinuousBernoulli, Kumaraswamy

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform",
    "Categorical", "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "Dirichlet", "Distribution",
    "ExpTransform", "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma",
    "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent",
    "IndependentTransform", "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace",
    "LogNormal", "LogisticNormal", "LowRankMultivariateNormal", "LowerCholeskyTransform",
    "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
    "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto", "Poisson",
    "PositiveDefiniteTransform", "PowerTransform", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StackTransform", "StickBreakingTransform", "StudentT",
    "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "VonMises", "Weibull",
    "Wishart", "biject_to", "constraint_registry", "constraints", "identity_transform",
    "kl_divergence",
    "register_kl", "transform_to", "transforms",
]

# PyTorch has one module per distribution (``torch.distributions.beta``); here a family shares a
# module. Register PyTorch's module names for those, so ``from torch.distributions.beta import
# Beta`` imports from the family's module.
_alias_modules(__name__, {"beta": gamma, "dirichlet": gamma, "exponential": uniform,
                          "laplace": uniform, "binomial": bernoulli,
                          "one_hot_categorical": categorical,
                          "independent": transformed_distribution, "log_normal": normal,
                          "cauchy": heavy_tailed, "studentT": heavy_tailed,
                          "pareto": heavy_tailed, "generalized_pareto": heavy_tailed,
                          "chi2": gamma_derived, "fishersnedecor": gamma_derived,
                          "inverse_gamma": gamma_derived, "half_normal": folded,
                          "half_cauchy": folded, "gumbel": extreme_value,
                          "weibull": extreme_value, "kumaraswamy": unit_interval,
                          "continuous_bernoulli": unit_interval, "von_mises": circular,
                          "geometric": discrete, "negative_binomial": discrete,
                          "multinomial": discrete, "relaxed_bernoulli": relaxed,
                          "relaxed_categorical": relaxed, "mixture_same_family": mixture,
                          "lowrank_multivariate_normal": matrix_distributions,
                          "wishart": matrix_distributions,
                          "lkj_cholesky": matrix_distributions})

# PyTorch's ``torch.distributions.transforms`` holds every transform; here the structured ones
# live in their own module (which builds on ``transforms``), so they are added to its namespace.
for _name in structured_transforms.__all__:
    setattr(transforms, _name, getattr(structured_transforms, _name))
transforms.__all__ = sorted({*transforms.__all__, *structured_transforms.__all__})
