"""Train one small model of each family in this process and print a fingerprint of each
(SHA-256 of every step's loss and the final parameters' bytes) as JSON.

Run by tests/test_determinism.py in several fresh processes, some while other processes keep
the cores busy: the fingerprints must be identical. Two threads, so that the paths whose
formulation is chosen by a rule of shapes run: the conv GEMM layouts (both), images and rows
shared between threads (im2col, max pooling, ReLU, cross entropy), BLAS on two threads.

    python tests/_determinism_worker.py [--benchmark]   # --benchmark: timing-based choice
"""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np

import microtorch as torch
from microtorch import nn


def _cnn():
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Dropout(0.2), nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


class _Lstm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(16, 64, num_layers=2, batch_first=True, dropout=0.1)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(self.lstm(x)[0][:, -1])


class _Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(64, 2, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


class _Lm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(1000, 64)
        self.out = nn.Linear(64, 1000)

    def forward(self, tokens):
        return self.out(self.embed(tokens)).reshape(-1, 1000)


# family -> (model, optimizer, inputs, targets)
FAMILIES = {
    "mlp": (lambda: nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256),
                                  nn.ReLU(), nn.Linear(256, 10)),
            lambda p: torch.optim.Adam(p, lr=1e-3),
            lambda rng: rng.standard_normal((128, 64), dtype=np.float32),
            lambda rng: rng.integers(0, 10, 128)),
    "cnn": (_cnn, lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9),
            lambda rng: rng.standard_normal((64, 1, 28, 28), dtype=np.float32),
            lambda rng: rng.integers(0, 10, 64)),
    "lstm": (_Lstm, lambda p: torch.optim.SGD(p, lr=0.05),
             lambda rng: rng.standard_normal((16, 20, 16), dtype=np.float32),
             lambda rng: rng.integers(0, 10, 16)),
    "transformer": (_Encoder, lambda p: torch.optim.Adam(p, lr=1e-3),
                    lambda rng: rng.standard_normal((16, 32, 64), dtype=np.float32),
                    lambda rng: rng.integers(0, 10, 16)),
    "embedding_lm": (_Lm, lambda p: torch.optim.Adam(p, lr=1e-3),
                     lambda rng: rng.integers(0, 1000, (32, 32)),
                     lambda rng: rng.integers(0, 1000, 32 * 32)),
}


def fingerprint(family: str, steps: int = 12) -> str:
    """Train ``family`` for ``steps`` steps from seed 0; the SHA-256 of losses and weights."""
    build, optimizer, make_x, make_y = FAMILIES[family]
    torch.manual_seed(0)
    model = build()
    opt = optimizer(model.parameters())
    rng = np.random.default_rng(1)
    digest = hashlib.sha256()
    for _ in range(steps):
        x, y = torch.from_numpy(make_x(rng)), torch.from_numpy(make_y(rng))
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        digest.update(loss.detach().numpy().tobytes())
    for p in model.parameters():
        digest.update(p.detach().numpy().tobytes())
    return digest.hexdigest()


def main() -> None:
    torch.set_num_threads(2)
    torch.backends.cpu.benchmark = "--benchmark" in sys.argv[1:]
    print(json.dumps({family: fingerprint(family) for family in FAMILIES}))


if __name__ == "__main__":
    main()
