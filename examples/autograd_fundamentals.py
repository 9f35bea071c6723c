"""PyTorch's tutorial "The Fundamentals of Autograd" (Introduction to PyTorch): its code path
without the plots: grad_fn chains, a training batch of a small model, turning autograd off,
``torch.autograd.profiler``, backward with a vector and the functional high-level API. The
profiler's table has timings, so the event names, call counts and table columns are printed."""

import math

import torch

_ = torch.manual_seed(0)

# A simple example: sin over [0, 2 pi], its graph and its gradient
a = torch.linspace(0., 2. * math.pi, steps=25, requires_grad=True)
print(a)
b = torch.sin(a)
print(b)
c = 2 * b
print(c)
d = c + 1
print(d)
out = d.sum()
print(out)

print('d:')
print(d.grad_fn)
print(d.grad_fn.next_functions)
print(d.grad_fn.next_functions[0][0].next_functions)
print(d.grad_fn.next_functions[0][0].next_functions[0][0].next_functions)
print(d.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0].next_functions)
print('\nc:')
print(c.grad_fn)
print('\nb:')
print(b.grad_fn)
print('\na:')
print(a.grad_fn)

out.backward()
print(a.grad)


# Autograd in training: one batch of a tiny model, then gradients accumulating
class TinyModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = torch.nn.Linear(1000, 100)
        self.relu = torch.nn.ReLU()
        self.layer2 = torch.nn.Linear(100, 10)

    def forward(self, x):
        return self.layer2(self.relu(self.layer1(x)))


some_input = torch.randn(16, 1000, requires_grad=False)
ideal_output = torch.randn(16, 10, requires_grad=False)
model = TinyModel()
print(model.layer2.weight[0][0:10])
print(model.layer2.weight.grad)

optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
prediction = model(some_input)
loss = (ideal_output - prediction).pow(2).sum()
print(loss)
loss.backward()
print(model.layer2.weight[0][0:10])
print(model.layer2.weight.grad[0][0:10])
optimizer.step()
print(model.layer2.weight[0][0:10])
print(model.layer2.weight.grad[0][0:10])

print(model.layer2.weight.grad[0][0:10])
for _ in range(5):
    prediction = model(some_input)
    loss = (ideal_output - prediction).pow(2).sum()
    loss.backward()
print(model.layer2.weight.grad[0][0:10])
optimizer.zero_grad()
print(model.layer2.weight.grad)  # (None: zero_grad sets gradients to None by default)

# Turning autograd off and on
a = torch.ones(2, 3, requires_grad=True)
print(a)
b1 = 2 * a
print(b1)
a.requires_grad = False
b2 = 2 * a
print(b2)

a = torch.ones(2, 3, requires_grad=True) * 2
b = torch.ones(2, 3, requires_grad=True) * 3
c1 = a + b
print(c1)
with torch.no_grad():
    c2 = a + b
print(c2)
c3 = a * b
print(c3)


def add_tensors1(x, y):
    return x + y


@torch.no_grad()
def add_tensors2(x, y):
    return x + y


print(add_tensors1(a, b))
print(add_tensors2(a, b))

x = torch.rand(5, requires_grad=True)
y = x.detach()
print(x)
print(y)

# In-place operations on a leaf that requires grad are refused (the tutorial shows the cell)
try:
    torch.linspace(0., 2. * math.pi, steps=25, requires_grad=True).sin_()
except RuntimeError as err:
    print("RuntimeError:", str(err).splitlines()[0])

# The autograd profiler: which ops ran, how often, in PyTorch's table
run_on_gpu = torch.cuda.is_available()
x = torch.randn(2, 3, requires_grad=True)
y = torch.rand(2, 3, requires_grad=True)
z = torch.ones(2, 3, requires_grad=True)
with torch.autograd.profiler.profile(use_cuda=run_on_gpu) as prf:
    for _ in range(1000):
        z = (z / x) * y
averages = prf.key_averages()
for event in sorted(averages, key=lambda e: e.key):
    print(event.key, event.count)
table = averages.table(sort_by='self_cpu_time_total')
print([column.strip() for column in table.splitlines()[1].split("  ") if column.strip()])
print(table.splitlines()[-1].split(":")[0])
print(z.grad_fn)

# Backward with a vector: the vector-Jacobian product
x = torch.randn(3, requires_grad=True)
y = x * 2
while y.data.norm() < 1000:
    y = y * 2
print(y)
v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
y.backward(v)
print(x.grad)


# The high-level API
def exp_adder(x, y):
    return 2 * x.exp() + 3 * y


inputs = (torch.rand(1), torch.rand(1))
print(inputs)
print(torch.autograd.functional.jacobian(exp_adder, inputs))
inputs = (torch.rand(3), torch.rand(3))
print(inputs)
print(torch.autograd.functional.jacobian(exp_adder, inputs))


def do_some_doubling(x):
    y = x * 2
    while y.data.norm() < 1000:
        y = y * 2
    return y


inputs = torch.randn(3)
my_gradients = torch.tensor([0.1, 1.0, 0.0001])
print(torch.autograd.functional.vjp(do_some_doubling, inputs, v=my_gradients))
