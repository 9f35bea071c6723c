"""A two-layer graph attention network (Velickovic et al.), after pytorch/examples' gat, on a
small synthetic graph. The attention is sparse: each head scores only the graph's edges,
holds the scores in a sparse COO tensor, normalises them over each node's neighbours with
``torch.sparse.softmax`` and aggregates with ``torch.sparse.mm``, so the gradients flow
through sparse tensors into the scores."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim import Adam


class GraphAttentionLayer(nn.Module):
    """h_i' = sum_j softmax_j(LeakyReLU(a^T [W h_i || W h_j])) W h_j over the edges (i, j)."""

    def __init__(self, in_features, out_features, n_heads, concat=False, dropout=0.4,
                 leaky_relu_slope=0.2):
        super().__init__()
        self.n_heads = n_heads
        self.concat = concat
        self.dropout = dropout
        if concat:
            self.out_features = out_features
            assert out_features % n_heads == 0
            self.n_hidden = out_features // n_heads
        else:
            self.n_hidden = out_features
        self.W = nn.Parameter(torch.empty(size=(in_features, self.n_hidden * n_heads)))
        self.a = nn.Parameter(torch.empty(size=(n_heads, 2 * self.n_hidden, 1)))
        self.leakyrelu = nn.LeakyReLU(leaky_relu_slope)
        nn.init.xavier_normal_(self.W)
        nn.init.xavier_normal_(self.a)

    def forward(self, h, edges):
        n_nodes = h.shape[0]
        h_transformed = torch.mm(h, self.W)
        h_transformed = F.dropout(h_transformed, self.dropout, training=self.training)
        # (n_heads, n_nodes, n_hidden)
        h_transformed = h_transformed.view(n_nodes, self.n_heads, self.n_hidden).permute(1, 0, 2)
        source_scores = torch.matmul(h_transformed, self.a[:, :self.n_hidden, :]).squeeze(-1)
        target_scores = torch.matmul(h_transformed, self.a[:, self.n_hidden:, :]).squeeze(-1)
        row, col = edges
        e = self.leakyrelu(source_scores[:, row] + target_scores[:, col])  # (n_heads, n_edges)

        heads = []
        for k in range(self.n_heads):
            scores = torch.sparse_coo_tensor(edges, e[k], (n_nodes, n_nodes))
            attention = torch.sparse.softmax(scores, dim=1)  # over each node's neighbours
            attention = torch.sparse_coo_tensor(
                attention.indices(), F.dropout(attention.values(), self.dropout,
                                               training=self.training), attention.shape)
            heads.append(torch.sparse.mm(attention, h_transformed[k]))
        h_prime = torch.stack(heads)
        if self.concat:
            return h_prime.permute(1, 0, 2).contiguous().view(n_nodes, self.out_features)
        return h_prime.mean(dim=0)


class GAT(nn.Module):
    def __init__(self, in_features, n_hidden, n_heads, num_classes, concat=False, dropout=0.4,
                 leaky_relu_slope=0.2):
        super().__init__()
        self.gat1 = GraphAttentionLayer(in_features, n_hidden, n_heads, concat, dropout,
                                        leaky_relu_slope)
        self.gat2 = GraphAttentionLayer(n_hidden, num_classes, 1, False, dropout,
                                        leaky_relu_slope)

    def forward(self, input_tensor, edges):
        x = self.gat1(input_tensor, edges)
        x = F.elu(x)
        x = self.gat2(x, edges)
        return F.log_softmax(x, dim=1)


def make_graph(n_nodes=120, n_classes=3, n_words=24, p_in=0.05, p_out=0.01):
    """A stochastic block model graph with self-loops, and word-count features."""
    labels = torch.arange(n_nodes) % n_classes
    same = labels[:, None] == labels[None, :]
    link = torch.rand(n_nodes, n_nodes) < torch.where(same, p_in, p_out)
    edges = torch.triu(link, diagonal=1).nonzero()
    loops = torch.arange(n_nodes)[:, None].expand(n_nodes, 2)
    edges = torch.cat([edges, edges.flip(1), loops]).T  # (2, n_edges)
    topics = torch.rand(n_classes, n_words) < 0.3
    words = (torch.rand(n_nodes, n_words) < 0.15) | (topics[labels]
                                                    & (torch.rand(n_nodes, n_words) < 0.5))
    features = words.float()
    features = features / features.sum(dim=1, keepdim=True).clamp(min=1)
    return features, labels, edges


def train_iter(epoch, model, optimizer, criterion, input, target, mask_train, mask_val,
               print_every=10):
    model.train()
    optimizer.zero_grad()
    output = model(*input)
    loss = criterion(output[mask_train], target[mask_train])
    loss.backward()
    optimizer.step()

    loss_train, acc_train = test(model, criterion, input, target, mask_train)
    loss_val, acc_val = test(model, criterion, input, target, mask_val)
    if epoch % print_every == 0:
        print(f'Epoch: {epoch:04d} loss_train: {loss_train:.4f} acc_train: {acc_train:.4f} '
              f'loss_val: {loss_val:.4f} acc_val: {acc_val:.4f}')


def test(model, criterion, input, target, mask):
    model.eval()
    with torch.no_grad():
        output = model(*input)
        output, target = output[mask], target[mask]
        loss = criterion(output, target)
        acc = (output.argmax(dim=1) == target).float().sum() / len(target)
    return loss.item(), acc.item()


if __name__ == '__main__':
    torch.manual_seed(13)
    features, labels, edges = make_graph()
    print(f'nodes: {len(labels)}, edges (with self-loops): {edges.shape[1]}')
    idx = torch.randperm(len(labels))
    idx_test, idx_val, idx_train = idx[:40], idx[40:60], idx[60:]

    gat_net = GAT(features.shape[1], 16, 4, labels.max().item() + 1, dropout=0.5)
    optimizer = Adam(gat_net.parameters(), lr=0.01, weight_decay=5e-4)
    criterion = nn.NLLLoss()
    for epoch in range(60):
        train_iter(epoch + 1, gat_net, optimizer, criterion, (features, edges), labels,
                   idx_train, idx_val, 20)
    loss_test, acc_test = test(gat_net, criterion, (features, edges), labels, idx_test)
    print(f'Test set results: loss {loss_test:.4f} accuracy {acc_test:.4f}')
