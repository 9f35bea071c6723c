"""Classify variable-length sequences with a bidirectional GRU over packed sequences
(``pad_sequence``, ``pack_padded_sequence``, ``pad_packed_sequence``) and Adagrad."""

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(3, 8, batch_first=True, bidirectional=True)
        self.out = nn.Linear(16, 2)

    def forward(self, padded, lengths):
        packed = pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
        output, hidden = self.gru(packed)
        unpacked, out_lengths = pad_packed_sequence(output, batch_first=True)
        summary = torch.cat([hidden[0], hidden[1]], dim=1)
        return self.out(summary), unpacked.shape, out_lengths


def main():
    torch.manual_seed(21)
    lengths = torch.randint(2, 9, (24,))
    seqs = [torch.randn(int(n), 3) for n in lengths]
    labels = torch.tensor([int(s[:, 0].sum() > 0) for s in seqs])
    padded = pad_sequence(seqs, batch_first=True)
    model = Model()
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)
    for step in range(8):
        optimizer.zero_grad()
        logits, shape, out_lengths = model(padded, lengths)
        loss = nn.functional.cross_entropy(logits, labels)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")
    print("unpacked shape", tuple(shape), "lengths", out_lengths.tolist()[:6])


if __name__ == "__main__":
    main()
