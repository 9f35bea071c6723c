"""An MNIST-style convolutional classifier, trained with Adadelta and a StepLR schedule.

Synthetic 28x28 "digits" (class-dependent blobs plus noise) stand in for MNIST, so the script
runs anywhere; the model, optimizer and loop follow the usual PyTorch example structure.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(16 * 12 * 12, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def make_digits(n, generator):
    labels = torch.randint(0, 10, (n,), generator=generator)
    images = torch.randn(n, 1, 28, 28, generator=generator) * 0.3
    rows = (labels * 2 + 4).tolist()
    for i, r in enumerate(rows):
        images[i, 0, r:r + 4, 6:22] += 1.0
    return images, labels


def train(model, loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        if batch_idx % 2 == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(loader.dataset)}]"
                  f"\tLoss: {loss.item():.6f}")


def test(model, loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(loader.dataset)
    print(f"Test set: Average loss: {test_loss:.4f}, Accuracy: {correct}/{len(loader.dataset)}")


def main():
    torch.manual_seed(1)
    g = torch.Generator().manual_seed(2)
    train_x, train_y = make_digits(96, g)
    test_x, test_y = make_digits(48, g)
    train_loader = DataLoader(TensorDataset(train_x, train_y), batch_size=16, shuffle=True)
    test_loader = DataLoader(TensorDataset(test_x, test_y), batch_size=32)
    model = Net()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    for epoch in range(1, 3):
        train(model, train_loader, optimizer, epoch)
        test(model, test_loader)
        scheduler.step()
        print("lr", scheduler.get_last_lr()[0])


if __name__ == "__main__":
    main()
