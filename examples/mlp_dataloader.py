"""A classifier on two interleaved spirals: ``TensorDataset`` + shuffling ``DataLoader``,
``nn.Sequential`` with BatchNorm1d and Dropout, SGD with momentum and Nesterov, MultiStepLR,
and train/eval accuracy with ``argmax``/``eq``."""

import math

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, random_split


def spirals(n, generator):
    t = torch.rand(n, generator=generator) * 3 * math.pi
    label = torch.randint(0, 2, (n,), generator=generator)
    sign = label.float() * 2 - 1
    xy = torch.stack([t.cos() * t * sign, t.sin() * t * sign], dim=1) / 10
    return xy + 0.05 * torch.randn(n, 2, generator=generator), label


def main():
    torch.manual_seed(3)
    g = torch.Generator().manual_seed(4)
    x, y = spirals(512, g)
    train_set, val_set = random_split(TensorDataset(x, y), [384, 128], generator=g)
    train_loader = DataLoader(train_set, batch_size=32, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=64)
    model = nn.Sequential(nn.Linear(2, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.1),
                          nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 2))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True,
                                weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[3, 5], gamma=0.5)
    for epoch in range(6):
        model.train()
        running = 0.0
        for xb, yb in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            running += loss.item() * xb.size(0)
        scheduler.step()
        model.eval()
        correct = 0
        with torch.no_grad():
            for xb, yb in val_loader:
                correct += (model(xb).argmax(1) == yb).sum().item()
        print(f"epoch {epoch}: train loss {running / len(train_set):.4f}, "
              f"val acc {correct}/{len(val_set)}, lr {scheduler.get_last_lr()[0]:.4f}")


if __name__ == "__main__":
    main()
