"""Semi-supervised node classification with a two-layer graph convolutional network (Kipf &
Welling) on a small synthetic graph of three communities, the program pytorch/examples' gcn
runs on Cora: sparse word features, a sparse normalised adjacency D^-1/2 (A + I) D^-1/2 made
from ``sparse_coo_tensor``, ``to_sparse`` and sparse @ sparse @ dense-diagonal products, and a
sparse @ dense product (``torch.mm``, ``torch.spmm``) in every layer."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim import Adam


class SparseGraphConv(nn.Module):
    """One propagation step: ``adjacency @ (x @ weight) + bias``; x and adjacency may be
    sparse, the product with the weight is dense."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))
        nn.init.xavier_normal_(self.weight)

    def forward(self, x, adjacency):
        projected = torch.mm(x, self.weight)
        return torch.spmm(adjacency, projected) + self.bias


class TwoLayerGCN(nn.Module):
    def __init__(self, n_in, n_hidden, n_classes, p_drop):
        super().__init__()
        self.first = SparseGraphConv(n_in, n_hidden)
        self.second = SparseGraphConv(n_hidden, n_classes)
        self.drop = nn.Dropout(p_drop)

    def forward(self, x, adjacency):
        hidden = self.drop(F.relu(self.first(x, adjacency)))
        return F.log_softmax(self.second(hidden, adjacency), dim=1)


def community_graph(n_nodes=150, n_classes=3, n_words=24, p_in=0.05, p_out=0.01):
    """A stochastic block model: (bag-of-words features, labels, undirected edge list)."""
    labels = torch.arange(n_nodes) % n_classes
    same = labels[:, None] == labels[None, :]
    link = torch.rand(n_nodes, n_nodes) < torch.where(same, p_in, p_out)
    upper = torch.triu(link, diagonal=1).nonzero()
    edges = torch.cat([upper, upper.flip(1)])
    topics = torch.rand(n_classes, n_words) < 0.3
    words = (torch.rand(n_nodes, n_words) < 0.15) | (topics[labels]
                                                    & (torch.rand(n_nodes, n_words) < 0.5))
    return words.float(), labels, edges


def sparse_inputs():
    """Row-normalised sparse features and the symmetric normalised adjacency with self-loops."""
    words, labels, edges = community_graph()
    n = len(labels)
    counts = words.sum(dim=1)
    inv_counts = torch.where(counts > 0, 1 / counts, torch.zeros_like(counts))
    features = torch.diag(inv_counts).to_sparse() @ words
    adjacency = torch.sparse_coo_tensor(edges.T, torch.ones(len(edges)), (n, n),
                                        dtype=torch.int64)
    with_loops = torch.eye(n) + adjacency  # dense + sparse: dense
    inv_sqrt_degree = torch.diag(with_loops.sum(dim=1).rsqrt()).to_sparse()
    normalised = (inv_sqrt_degree @ with_loops @ inv_sqrt_degree).to_sparse()
    print(f'nodes: {n}, edges: {len(edges)}, adjacency nnz: {normalised._nnz()}')
    return features.to_sparse(), labels, normalised


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
    torch.manual_seed(42)
    features, labels, adjacency = sparse_inputs()
    order = torch.randperm(len(labels))
    test_nodes, val_nodes, train_nodes = order[:50], order[50:80], order[80:]
    model = TwoLayerGCN(features.shape[1], 16, int(labels.max()) + 1, p_drop=0.5)
    fit(model, (features, adjacency), labels, (train_nodes, val_nodes), epochs=100,
        report_every=20)
    nll, acc = evaluate(model, (features, adjacency), labels, test_nodes)
    print(f'test nll {nll:.4f} acc {acc:.4f}')
