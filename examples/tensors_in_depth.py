"""Tensors in depth: creation, dtypes, broadcasting, math, in-place and ``out=`` forms,
copies, devices, shapes and the NumPy bridge — the ground PyTorch's "Introduction to PyTorch
Tensors" tutorial covers, as one program whose every line prints what PyTorch prints.

An ordinary PyTorch script: under microtorch it runs through the import hook of
``tests/_torch_alias.py`` (or with ``import microtorch as torch``).
"""

import math

import numpy as np
import torch

# -- creation and seeding: the same seed gives the same numbers
torch.manual_seed(1729)
first = torch.rand(2, 3)
torch.manual_seed(1729)
again = torch.rand(2, 3)
print(first)
print(torch.equal(first, again), torch.zeros(2, 3), torch.ones(2, 3), sep="\n")
x = torch.empty(2, 2, 3)
for like in (torch.empty_like(x), torch.zeros_like(x), torch.ones_like(x), torch.rand_like(x)):
    print(like.shape, like.dtype)
print(torch.tensor([[3.1415926, 2.71828], [1.61803, 0.0072897]]))
print(torch.tensor((2, 3, 5, 7, 11, 13, 17, 19)), torch.tensor(((2, 4, 6), [3, 6, 9])))

# -- dtypes: printed when they are not the default; .to() truncates toward zero
print(torch.ones((2, 3), dtype=torch.int16))
scaled = torch.rand((2, 3), dtype=torch.float64) * 20.0
print(scaled, scaled.to(torch.int32), sep="\n")

# -- arithmetic with scalars and tensors, and broadcasting
twos = torch.ones(2, 2) * 2
threes = (torch.ones(2, 2) * 7 - 1) / 2
print(twos ** 0.5, twos ** torch.tensor([[1, 2], [3, 4]]), threes * twos ** 2, sep="\n")
layers = torch.ones(4, 3, 2)
for other in (torch.rand(3, 2), torch.rand(3, 1), torch.rand(1, 2)):
    print((layers * other)[1])
try:
    layers * torch.rand(4, 3)
except RuntimeError as error:
    print("RuntimeError:", error)

# -- a sample of the math: common, trigonometric, bitwise, comparisons, reductions, linalg
a = torch.rand(2, 4) * 2 - 1
print(torch.abs(a), torch.ceil(a), torch.floor(a), torch.clamp(a, -0.5, 0.5), sep="\n")
angles = torch.tensor([0, math.pi / 4, math.pi / 2, 3 * math.pi / 4])
print(torch.sin(angles), torch.asin(torch.sin(angles)), sep="\n")
print(torch.bitwise_xor(torch.tensor([1, 5, 11]), torch.tensor([2, 7, 10])))
d = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
print(torch.eq(d, torch.ones(1, 2)))
print(torch.max(d), torch.max(d).item(), torch.mean(d), torch.std(d), torch.prod(d))
print(torch.unique(torch.tensor([1, 2, 1, 2, 1, 2])))
print(torch.cross(torch.tensor([0.0, 1.0, 0.0]), torch.tensor([1.0, 0.0, 0.0]), dim=0))
m = torch.matmul(torch.tensor([[2.0, 1.0], [0.5, 3.0]]), torch.tensor([[3.0, 0.0], [0.0, 3.0]]))
u, s, v = torch.svd(m)
print(s, torch.dist(u @ torch.diag(s) @ v.T, m) < 1e-5)

# -- in place (a trailing underscore) and into an existing tensor (out=)
b = torch.tensor([0, math.pi / 4, math.pi / 2, 3 * math.pi / 4])
print(torch.sin_(b), b, sep="\n")
a, b = torch.ones(2, 2), torch.rand(2, 2)
print(a.add_(b), b.mul_(b), a, sep="\n")
c = torch.zeros(2, 2)
result = torch.matmul(torch.rand(2, 2), torch.rand(2, 2), out=c)
print(result is c, c)
torch.rand(2, 2, out=c)
print(c)

# -- copies: a name is a label, clone() copies, detach() leaves autograd behind
a = torch.ones(2, 2)
alias, copy = a, a.clone()
a[0][1] = 561
print(alias, copy, sep="\n")
tracked = torch.rand(2, 2, requires_grad=True)
print(tracked.clone(), tracked.detach().clone(), sep="\n")

# -- devices: the same code on whichever is there
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(torch.rand(2, 2).to(device).device.type in ("cpu", "cuda"))

# -- shapes: unsqueeze, squeeze (only extent 1), reshape (a view when it can be)
image = torch.rand(3, 226, 226)
print(image.unsqueeze(0).shape, torch.rand(1, 20).squeeze(0).shape,
      torch.rand(2, 2).squeeze(0).shape)
print((layers * torch.rand(3).unsqueeze(1))[0])
image.unsqueeze_(0)
print(image.shape)
features = torch.rand(6, 20, 20)
flat = features.reshape(6 * 20 * 20)
features[0, 0, 0] = -1.0
print(flat.shape, torch.reshape(features, (6 * 20 * 20,)).shape, flat[0].item())

# -- the NumPy bridge shares memory both ways
array = np.ones((2, 3))
shared = torch.from_numpy(array)
array[1, 1] = 23
print(shared)
tensor = torch.rand(2, 3)
view = tensor.numpy()
tensor.mul_(2)
print(view)
