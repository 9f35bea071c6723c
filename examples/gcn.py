"""A two-layer graph convolutional network (Kipf & Welling), as pytorch/examples' gcn, on a
small synthetic citation-like graph: three communities, bag-of-words-like node features, a
sparse normalised adjacency matrix D^-1/2 (A + I) D^-1/2 built with sparse tensors, and
sparse @ dense products in every layer (the features are a sparse tensor too)."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim import Adam


class GraphConv(nn.Module):
    """H' = A_hat @ (H @ W) (+ b): the graph convolution of pytorch/examples' gcn."""

    def __init__(self, input_dim, output_dim, use_bias=False):
        super().__init__()
        self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)
        self.bias = None
        if use_bias:
            self.bias = nn.Parameter(torch.Tensor(output_dim))
            nn.init.zeros_(self.bias)

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)  # sparse features @ dense weight
        output = torch.spmm(adj_mat, support)  # sparse adjacency @ dense
        if self.bias is not None:
            output = output + self.bias
        return output


class GCN(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
        super().__init__()
        self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
        self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input_tensor, adj_mat):
        x = self.gc1(input_tensor, adj_mat)
        x = F.relu(x)
        x = self.dropout(x)
        x = self.gc2(x, adj_mat)
        return F.log_softmax(x, dim=1)


def make_graph(n_nodes=150, n_classes=3, n_words=24, p_in=0.05, p_out=0.01):
    """A stochastic block model graph and word-count features drawn around each class."""
    labels = torch.arange(n_nodes) % n_classes
    same = labels[:, None] == labels[None, :]
    link = torch.rand(n_nodes, n_nodes) < torch.where(same, p_in, p_out)
    edges = torch.triu(link, diagonal=1).nonzero()
    edges = torch.cat([edges, edges.flip(1)])  # both directions, as a citation graph's
    topics = torch.rand(n_classes, n_words) < 0.3
    words = (torch.rand(n_nodes, n_words) < 0.15) | (topics[labels]
                                                    & (torch.rand(n_nodes, n_words) < 0.5))
    return words.float(), labels, edges


def load_graph(device):
    """The preprocessing of pytorch/examples' gcn (load_cora) on the synthetic graph."""
    features, labels, edges = make_graph()
    scale_vector = torch.sum(features, dim=1)
    scale_vector = 1 / scale_vector
    scale_vector[scale_vector == float('inf')] = 0
    scale_vector = torch.diag(scale_vector).to_sparse()
    features = scale_vector @ features

    V = len(labels)
    E = edges.shape[0]
    adj_mat = torch.sparse_coo_tensor(edges.T, torch.ones(E), (V, V), dtype=torch.int64)
    adj_mat = torch.eye(V) + adj_mat  # self-loops (dense + sparse is dense)

    degree_mat = torch.sum(adj_mat, dim=1)
    degree_mat = torch.sqrt(1 / degree_mat)
    degree_mat[degree_mat == float('inf')] = 0
    degree_mat = torch.diag(degree_mat).to_sparse()
    adj_mat = degree_mat @ adj_mat @ degree_mat  # the renormalisation trick
    print(f'nodes: {V}, edges: {E}, adjacency nnz: {adj_mat.to_sparse()._nnz()}')
    return features.to_sparse().to(device), labels.to(device), adj_mat.to_sparse().to(device)


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
    torch.manual_seed(42)
    device = torch.device('cpu')
    features, labels, adj_mat = load_graph(device)
    idx = torch.randperm(len(labels)).to(device)
    idx_test, idx_val, idx_train = idx[:50], idx[50:80], idx[80:]

    gcn = GCN(features.shape[1], 16, labels.max().item() + 1, True, 0.5).to(device)
    optimizer = Adam(gcn.parameters(), lr=0.01, weight_decay=5e-4)
    criterion = nn.NLLLoss()
    for epoch in range(100):
        train_iter(epoch + 1, gcn, optimizer, criterion, (features, adj_mat), labels, idx_train,
                   idx_val, 20)
    loss_test, acc_test = test(gcn, criterion, (features, adj_mat), labels, idx_test)
    print(f'Test set results: loss {loss_test:.4f} accuracy {acc_test:.4f}')
