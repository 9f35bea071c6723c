"""Train an autoencoder, save a checkpoint (model, optimizer and scheduler state dicts plus
the epoch) with ``torch.save``, load it into fresh objects with ``torch.load`` and resume:
the resumed run must continue exactly where the first one stopped. ReduceLROnPlateau
lowers the learning rate on a plateau."""

import io

import torch
import torch.nn as nn


def make():
    model = nn.Sequential(nn.Linear(12, 4), nn.ReLU(), nn.Linear(4, 12))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=1)
    return model, optimizer, scheduler


def epoch(model, optimizer, data):
    total = 0.0
    for i in range(0, len(data), 8):
        batch = data[i:i + 8]
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(batch), batch)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / (len(data) // 8)


def main():
    torch.manual_seed(5)
    data = torch.randn(64, 12)
    model, optimizer, scheduler = make()
    for e in range(3):
        loss = epoch(model, optimizer, data)
        scheduler.step(loss)
        print(f"epoch {e} loss {loss:.5f} lr {optimizer.param_groups[0]['lr']}")
    buffer = io.BytesIO()
    torch.save({"epoch": 3, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict()}, buffer)
    buffer.seek(0)
    checkpoint = torch.load(buffer)
    model2, optimizer2, scheduler2 = make()
    model2.load_state_dict(checkpoint["model"])
    optimizer2.load_state_dict(checkpoint["optimizer"])
    scheduler2.load_state_dict(checkpoint["scheduler"])
    print("restored epoch", checkpoint["epoch"], "keys", sorted(checkpoint["model"].keys()))
    for e in range(3, 7):
        loss = epoch(model2, optimizer2, data)
        scheduler2.step(loss)
        print(f"epoch {e} loss {loss:.5f} lr {optimizer2.param_groups[0]['lr']}")
    same = all(torch.equal(a, b) for a, b in zip(model.parameters(), checkpoint["model"].values()))
    print("checkpoint matches the first model:", same)


if __name__ == "__main__":
    main()
