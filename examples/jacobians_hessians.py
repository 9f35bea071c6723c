"""PyTorch's tutorial "Jacobians, Hessians, hvp, vhp, and more: composing function transforms"
(torch.func): its computations, printing values where the tutorial prints timings."""

from functools import partial

import torch
import torch.nn.functional as F
from torch.func import grad, hessian, jacfwd, jacrev, jvp, vjp, vmap

_ = torch.manual_seed(0)


def predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


# Computing the Jacobian: row by row with autograd, then with vmap of vjp, then jacrev
D = 16
weight = torch.randn(D, D)
bias = torch.randn(D)
x = torch.randn(D)  # feature vector


def compute_jac(xp):
    jacobian_rows = [torch.autograd.grad(predict(weight, bias, xp), xp, vec)[0]
                     for vec in unit_vectors]
    return torch.stack(jacobian_rows)


xp = x.clone().requires_grad_()
unit_vectors = torch.eye(D)
jacobian = compute_jac(xp)
print(tuple(jacobian.shape))
print(jacobian[0])  # show first row

_, vjp_fn = vjp(partial(predict, weight, bias), x)
ft_jacobian, = vmap(vjp_fn)(unit_vectors)
print("vmap(vjp) == rows:", torch.allclose(ft_jacobian, jacobian))
ft_jacobian = jacrev(predict, argnums=2)(weight, bias, x)
print("jacrev == rows:", torch.allclose(ft_jacobian, jacobian))

# Jacobians with respect to the parameters instead of the input
ft_jac_weight, ft_jac_bias = jacrev(predict, argnums=(0, 1))(weight, bias, x)
print(tuple(ft_jac_weight.shape), tuple(ft_jac_bias.shape))
print(f"{ft_jac_weight.abs().sum().item():.4f} {ft_jac_bias.abs().sum().item():.4f}")

# jacrev against jacfwd: more outputs than inputs, then the reverse
for Din, Dout in ((32, 2048), (2048, 32)):
    weight = torch.randn(Dout, Din)
    bias = torch.randn(Dout)
    x = torch.randn(Din)
    print(tuple(weight.shape))
    j_fwd = jacfwd(predict, argnums=2)(weight, bias, x)
    j_rev = jacrev(predict, argnums=2)(weight, bias, x)
    print(tuple(j_fwd.shape), "jacfwd == jacrev:", torch.allclose(j_fwd, j_rev, atol=1e-6))

# Hessians: the hessian API, jacfwd(jacfwd) and jacrev(jacrev)
Din = 512
Dout = 32
weight = torch.randn(Dout, Din)
bias = torch.randn(Dout)
x = torch.randn(Din)
hess_api = hessian(predict, argnums=2)(weight, bias, x)
hess_fwdfwd = jacfwd(jacfwd(predict, argnums=2), argnums=2)(weight, bias, x)
hess_revrev = jacrev(jacrev(predict, argnums=2), argnums=2)(weight, bias, x)
print(tuple(hess_api.shape))
print("hessian == jacfwd(jacfwd):", torch.allclose(hess_api, hess_fwdfwd, atol=1e-6))
print("hessian == jacrev(jacrev):", torch.allclose(hess_api, hess_revrev, atol=1e-6))
# 5 digits: this sum is as sensitive as tanh'' to the rounding of the float32 product W x + b
# (~1e-5 in z here), which depends on the BLAS library's order of summation.
print(f"{hess_api.abs().sum().item():.5g}")

# Batch Jacobian and batch Hessian
batch_size = 64
Din = 31
Dout = 33
weight = torch.randn(Dout, Din)
print(f"weight shape = {tuple(weight.shape)}")
bias = torch.randn(Dout)
x = torch.randn(batch_size, Din)
compute_batch_jacobian = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))
batch_jacobian0 = compute_batch_jacobian(weight, bias, x)


def predict_with_output_summed(weight, bias, x):
    return predict(weight, bias, x).sum(0)


batch_jacobian1 = jacrev(predict_with_output_summed, argnums=2)(weight, bias, x).movedim(1, 0)
print(tuple(batch_jacobian0.shape), "sum trick:",
      torch.allclose(batch_jacobian0, batch_jacobian1))
compute_batch_hessian = vmap(hessian(predict, argnums=2), in_dims=(None, None, 0))
batch_hess = compute_batch_hessian(weight, bias, x)
print(tuple(batch_hess.shape))
print(f"{batch_hess.abs().sum().item():.3f}")


# Hessian-vector products: reverse over forward, and reverse over reverse
def hvp(f, primals, tangents):
    return jvp(grad(f), primals, tangents)[1]


def f(x):
    return x.sin().sum()


x = torch.randn(2048)
tangent = torch.randn(2048)
result = hvp(f, (x,), (tangent,))


def hvp_revrev(f, primals, tangents):
    _, vjp_fn = vjp(grad(f), *primals)
    return vjp_fn(*tangents)


result_hvp_revrev = hvp_revrev(f, (x,), (tangent,))
print("hvp == hvp_revrev:", torch.allclose(result, result_hvp_revrev[0]))
print(result[:4])
