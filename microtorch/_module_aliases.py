"""PyTorch's module paths for classes microtorch keeps in a shared module.

PyTorch has a module per optimizer (``torch.optim.adamw``), per distribution
(``torch.distributions.beta``) and per kind of norm (``torch.nn.modules.batchnorm``);
microtorch groups some of them by category. Pickles of whole models and optimizers name
classes by those paths, and programs import from them, so each such path is registered as
another name of the module that holds the class.
"""

from __future__ import annotations

import sys
from types import ModuleType


def alias_modules(package: str, aliases: dict[str, ModuleType]) -> None:
    """Make ``package.<name>`` import as ``aliases[name]`` (and be an attribute of the
    package), for each name."""
    parent = sys.modules[package]
    for name, module in aliases.items():
        sys.modules[f"{package}.{name}"] = module
        setattr(parent, name, module)
