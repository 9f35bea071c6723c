"""A tour of autograd as the beginner tutorials give it: requires_grad, grad_fn names and
``next_functions``, ``backward`` with a gradient argument, ``retain_grad``, ``no_grad``,
``detach``, ``torch.autograd.grad`` and a second derivative."""

import torch
import torch.nn as nn


def main():
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    print(y)
    print(y.grad_fn)
    z = y * y * 3
    out = z.mean()
    print(z, out)
    out.backward()
    print(x.grad)

    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    while y.data.norm() < 100:
        y = y * 2
    v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
    y.backward(v)
    print(x.grad)
    print(x.requires_grad, (x ** 2).requires_grad)
    with torch.no_grad():
        print((x ** 2).requires_grad)
    print(x.detach().requires_grad)

    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    target = torch.randn(1, 2)
    loss = nn.MSELoss()(net(torch.randn(1, 4)), target)
    print(loss.grad_fn)
    print(loss.grad_fn.next_functions[0][0])
    print(loss.grad_fn.next_functions[0][0].next_functions[0][0])
    net.zero_grad()
    print("bias grad before", net[0].bias.grad)
    loss.backward()
    print("bias grad after", net[0].bias.grad)

    t = torch.tensor(2.0, requires_grad=True)
    f = t ** 3
    (df,) = torch.autograd.grad(f, t, create_graph=True)
    (d2f,) = torch.autograd.grad(df, t)
    print(f"f'(2) = {df.item():.1f}, f''(2) = {d2f.item():.1f}")


if __name__ == "__main__":
    main()
