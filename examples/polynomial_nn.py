"""The tutorials' polynomial regression with ``torch.nn``: features x, x², x³ through
``unsqueeze``/``pow``, ``nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))``, a summed MSE
loss and a manual update under ``torch.no_grad()``, then the same fit with RMSprop."""

import math

import torch


def main():
    x = torch.linspace(-math.pi, math.pi, 500)
    y = torch.sin(x)
    p = torch.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
    loss_fn = torch.nn.MSELoss(reduction="sum")
    learning_rate = 1e-6
    for t in range(600):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        if t % 200 == 199:
            print(t, f"{loss.item():.3f}")
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for param in model.parameters():
                param -= learning_rate * param.grad
    linear_layer = model[0]
    print(f"Result: y = {linear_layer.bias.item():.4f} + {linear_layer.weight[:, 0].item():.4f} x"
          f" + {linear_layer.weight[:, 1].item():.4f} x^2"
          f" + {linear_layer.weight[:, 2].item():.4f} x^3")
    # (lr 1e-4: at 1e-3 the steps overshoot and oscillate, and the loss printed after them
    # depends, in its second decimal, on the rounding of the BLAS kernels that ran, PyTorch's
    # as much as microtorch's)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-4)
    for _ in range(300):
        loss = loss_fn(model(xx), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("after RMSprop", f"{loss.item():.3f}")


if __name__ == "__main__":
    main()
