"""Node classification with a two-layer graph attention network (Velickovic et al.), the model
of pytorch/examples' gat, on a small synthetic graph, with the attention kept sparse: every head
scores only the graph's edges, holds the scores in a ``sparse_coo_tensor``, normalises them over
each node's neighbours with ``torch.sparse.softmax`` and aggregates with ``torch.sparse.mm``,
so the gradients flow through sparse tensors into the scores."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim import Adam


class EdgeAttention(nn.Module):
    """Multi-head attention over a graph's edges (i, j): node i's new state is the average over
    heads of sum_j softmax_j(LeakyReLU(u . W x_i + v . W x_j)) W x_j."""

    def __init__(self, n_in, n_out, heads, p_drop, slope=0.2):
        super().__init__()
        self.heads, self.n_out, self.p_drop, self.slope = heads, n_out, p_drop, slope
        self.proj = nn.Parameter(torch.empty(n_in, heads * n_out))
        self.score_src = nn.Parameter(torch.empty(heads, n_out))
        self.score_dst = nn.Parameter(torch.empty(heads, n_out))
        for p in (self.proj, self.score_src, self.score_dst):
            nn.init.xavier_normal_(p)

    def forward(self, x, edges):
        n = x.shape[0]
        z = F.dropout(x @ self.proj, self.p_drop, self.training)
        z = z.reshape(n, self.heads, self.n_out).transpose(0, 1)  # (heads, nodes, n_out)
        src = (z * self.score_src[:, None, :]).sum(-1)  # (heads, nodes)
        dst = (z * self.score_dst[:, None, :]).sum(-1)
        logits = F.leaky_relu(src[:, edges[0]] + dst[:, edges[1]], self.slope)
        outputs = []
        for head in range(self.heads):
            weights = torch.sparse.softmax(
                torch.sparse_coo_tensor(edges, logits[head], (n, n)), dim=1)
            weights = torch.sparse_coo_tensor(
                weights.indices(), F.dropout(weights.values(), self.p_drop, self.training),
                weights.shape)
            outputs.append(torch.sparse.mm(weights, z[head]))
        return torch.stack(outputs).mean(dim=0)


class TwoLayerGAT(nn.Module):
    def __init__(self, n_in, n_hidden, heads, n_classes, p_drop):
        super().__init__()
        self.first = EdgeAttention(n_in, n_hidden, heads, p_drop)
        self.second = EdgeAttention(n_hidden, n_classes, 1, p_drop)

    def forward(self, x, edges):
        return F.log_softmax(self.second(F.elu(self.first(x, edges)), edges), dim=1)


def community_graph(n_nodes=120, n_classes=3, n_words=24, p_in=0.05, p_out=0.01):
    """A stochastic block model with self-loops: (normalised word features, labels, edges
    as a (2, n_edges) index tensor)."""
    labels = torch.arange(n_nodes) % n_classes
    same = labels[:, None] == labels[None, :]
    link = torch.rand(n_nodes, n_nodes) < torch.where(same, p_in, p_out)
    upper = torch.triu(link, diagonal=1).nonzero()
    loops = torch.arange(n_nodes)[:, None].expand(n_nodes, 2)
    edges = torch.cat([upper, upper.flip(1), loops]).T
    topics = torch.rand(n_classes, n_words) < 0.3
    words = (torch.rand(n_nodes, n_words) < 0.15) | (topics[labels]
                                                    & (torch.rand(n_nodes, n_words) < 0.5))
    words = words.float()
    return words / words.sum(dim=1, keepdim=True).clamp(min=1), labels, edges


def evaluate(model, inputs, labels, nodes):
    """(mean NLL, accuracy) of the model's predictions on the given nodes, in eval mode."""
    model.eval()
    with torch.no_grad():
        log_probs = model(*inputs)[nodes]
        truth = labels[nodes]
        nll = F.nll_loss(log_probs, truth)
        hits = (log_probs.argmax(dim=1) == truth).float().mean()
    return nll.item(), hits.item()


def fit(model, inputs, labels, splits, epochs, report_every):
    """Full-batch training on the training nodes, a report line every ``report_every`` epochs."""
    train, val = splits
    optimizer = Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for epoch in range(1, epochs + 1):
        model.train()
        optimizer.zero_grad()
        F.nll_loss(model(*inputs)[train], labels[train]).backward()
        optimizer.step()
        if epoch % report_every == 0:
            (tl, ta), (vl, va) = evaluate(model, inputs, labels, train), evaluate(
                model, inputs, labels, val)
            print(f'epoch {epoch:3d}  train nll {tl:.4f} acc {ta:.4f}  '
                  f'val nll {vl:.4f} acc {va:.4f}')


if __name__ == '__main__':
    torch.manual_seed(13)
    features, labels, edges = community_graph()
    print(f'nodes: {len(labels)}, edges (with self-loops): {edges.shape[1]}')
    order = torch.randperm(len(labels))
    test_nodes, val_nodes, train_nodes = order[:40], order[40:60], order[60:]
    model = TwoLayerGAT(features.shape[1], 16, 4, int(labels.max()) + 1, p_drop=0.5)
    fit(model, (features, edges), labels, (train_nodes, val_nodes), epochs=60, report_every=20)
    nll, acc = evaluate(model, (features, edges), labels, test_nodes)
    print(f'test nll {nll:.4f} acc {acc:.4f}')
