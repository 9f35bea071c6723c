"""``microtorch.func``: composable function transforms (PyTorch's ``torch.func``).

``vmap`` batches a function with batching rules (``microtorch._functorch``); ``grad``,
``grad_and_value``, ``vjp``, ``jacrev`` use reverse-mode autograd, ``jvp``, ``jacfwd``,
``linearize`` forward mode (``autograd.forward_ad``), ``hessian`` both; ``functional_call`` and
``stack_module_state`` turn modules into functions of their parameters. They compose:
``vmap(grad(loss), in_dims=(None, 0, 0))`` gives per-sample gradients in one batched pass.
"""

from .._functorch.eager_transforms import (
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    vjp,
)
from .._functorch.functional_call import functional_call, stack_module_state
from .._functorch.vmap import vmap

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
           "linearize", "functional_call", "stack_module_state"]
