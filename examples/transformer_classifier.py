"""A sequence classifier on ``nn.TransformerEncoder`` with sinusoidal positional encoding,
a padding mask, label smoothing and a OneCycleLR schedule (synthetic task: is the sequence's
first token larger than its last?)."""

import math

import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(0)]


class Classifier(nn.Module):
    def __init__(self, ntoken=20, d_model=16, nhead=2, nlayers=2):
        super().__init__()
        self.embedding = nn.Embedding(ntoken, d_model, padding_idx=0)
        self.pos = PositionalEncoding(d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=32, dropout=0.1)
        self.encoder = nn.TransformerEncoder(layer, nlayers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, 2)
        self.d_model = d_model

    def forward(self, src, pad_mask):
        x = self.pos(self.embedding(src) * math.sqrt(self.d_model))
        x = self.encoder(x, src_key_padding_mask=pad_mask)
        keep = (~pad_mask).t().unsqueeze(-1).float()
        return self.head((x * keep).sum(0) / keep.sum(0))


def main():
    torch.manual_seed(11)
    seq_len, n = 10, 96
    src = torch.randint(1, 20, (seq_len, n))
    lengths = torch.randint(4, seq_len + 1, (n,))
    pad_mask = torch.arange(seq_len).unsqueeze(1) >= lengths.unsqueeze(0)
    src = src.masked_fill(pad_mask, 0)
    last = src.gather(0, (lengths - 1).unsqueeze(0)).squeeze(0)
    labels = (src[0] > last).long()
    pad_mask = pad_mask.t()
    model = Classifier()
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=12)
    for step in range(12):
        idx = torch.arange(step % 3 * 32, step % 3 * 32 + 32)
        optimizer.zero_grad()
        logits = model(src[:, idx], pad_mask[idx])
        loss = criterion(logits, labels[idx])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        scheduler.step()
        print(f"step {step}: loss {loss.item():.4f} lr {scheduler.get_last_lr()[0]:.6f}")
    model.eval()
    with torch.no_grad():
        acc = (model(src, pad_mask).argmax(-1) == labels).float().mean()
    print(f"accuracy {acc.item():.4f}")


if __name__ == "__main__":
    main()
