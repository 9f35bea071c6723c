"""Mixed-precision training on the CPU: ``torch.autocast`` runs the linear layers in float16
and the loss in float32, a ``torch.amp.GradScaler`` scales the loss, skips the step an
injected overflow poisons and grows the scale every few clean steps; the master weights stay
float32."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def dtype_name(t):
    return str(t.dtype).split(".")[-1]


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=3)
    x = torch.randn(64, 8)
    y = x[:, :1] * 2 - x[:, 1:2]
    for step in range(12):
        with torch.autocast("cpu", dtype=torch.float16):
            out = model(x)
            loss = F.mse_loss(out, y)
        if step == 5:
            loss = loss * float("inf")  # an overflow: this step is skipped, the scale backs off
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        print(f"step {step} out {dtype_name(out)} loss {dtype_name(loss)} {loss.item():.2f} "
              f"scale {scaler.get_scale():.0f}")
    weight = model[0].weight
    print("master weights", dtype_name(weight), dtype_name(weight.grad), scaler.state_dict())


if __name__ == "__main__":
    main()
