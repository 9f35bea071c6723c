"""The hook form of spectral normalization (``nn.utils.spectral_norm``): parameter
``<name>_orig``, buffers ``<name>_u`` / ``<name>_v``, and a forward pre-hook that runs the power
iteration (in training mode) and sets ``<name> = <name>_orig / sigma``."""

from __future__ import annotations

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops.creation import empty
from .. import functional as F
from .. import init
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    """The forward pre-hook (and its state-dict version stamp)."""

    _version = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim = name, dim
        self.n_power_iterations, self.eps = n_power_iterations, eps
        self.handles: list = []

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.ndim) if d != self.dim])
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):  # v first, then u (PyTorch's order)
                    v.copy_(F.normalize(weight_mat.t() @ u, dim=0, eps=self.eps))
                    u.copy_(F.normalize(weight_mat @ v, dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()
        sigma = (u * (weight_mat @ v)).sum()
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for attr in (self.name, self.name + "_u", self.name + "_v", self.name + "_orig"):
            delattr(module, attr)
        module.register_parameter(self.name, Parameter(weight.detach()))
        for handle in self.handles:
            handle.remove()

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> SpectralNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            # u then v from the default stream, as PyTorch draws them; no iteration yet
            u = F.normalize(init.normal_(empty(h, dtype=weight.dtype, device=weight.device)),
                            dim=0, eps=fn.eps)
            v = F.normalize(init.normal_(empty(w, dtype=weight.dtype, device=weight.device)),
                            dim=0, eps=fn.eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        fn.handles.append(module.register_forward_pre_hook(fn))

        def stamp(mod, state_dict, prefix, local_metadata) -> None:
            versions = local_metadata.setdefault("spectral_norm", {})
            key = name + ".version"
            if key in versions:
                raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
            versions[key] = SpectralNorm._version
        fn.handles.append(module._register_state_dict_hook(stamp))
        return fn


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm before every forward (power iteration
    in training mode); ``dim`` defaults to 1 for transposed convolutions, else 0."""
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`spectral_norm`: ``<name>`` is one parameter again."""
    for hook in list(module._forward_pre_hooks.values()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
