import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def ring_with_chords(num_nodes):
    """A fixed graph: a ring, and a chord from every third node across the ring."""
    edges = [(i, (i + 1) % num_nodes) for i in range(num_nodes)]
    edges += [(i, (i + num_nodes // 2) % num_nodes) for i in range(0, num_nodes, 3)]
    return edges


def normalized_adjacency(edge_index, num_nodes):
    """D^-1/2 (A + I) D^-1/2 of an undirected graph, as a sparse COO tensor (Kipf & Welling)."""
    loops = torch.arange(num_nodes).unsqueeze(0).repeat(2, 1)
    index = torch.cat([edge_index, edge_index.flip(0), loops], dim=1)
    adj = torch.sparse_coo_tensor(index, torch.ones(index.size(1)), (num_nodes, num_nodes)).coalesce()
    deg = torch.sparse.sum(adj, dim=1).to_dense()
    d_inv_sqrt = deg.pow(-0.5)
    row, col = adj.indices()
    values = d_inv_sqrt[row] * adj.values() * d_inv_sqrt[col]
    return torch.sparse_coo_tensor(adj.indices(), values, adj.shape)


def propagate(adj, h):
    """adj @ h for every graph of a batch: h is (B, N, F), adj is a sparse (N, N)."""
    b, n, f = h.shape
    flat = h.transpose(0, 1).reshape(n, b * f)  # (N, B*F)
    return torch.spmm(adj, flat).reshape(n, b, f).transpose(0, 1)


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        bound = 1.0 / math.sqrt(out_features)
        nn.init.uniform_(self.weight, -bound, bound)
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x, adj):
        support = x @ self.weight  # (B, N, out)
        return propagate(adj, support) + self.bias


class GCN(nn.Module):
    """Two graph convolutions over one fixed graph; the input is a batch of node features (B, N, F)."""

    def __init__(self, num_nodes=10, in_features=5, hidden=16, num_classes=3):
        super().__init__()
        self.num_nodes = num_nodes
        edges = torch.tensor(ring_with_chords(num_nodes), dtype=torch.long).t()
        self.register_buffer("edge_index", edges)
        self.gc1 = GraphConvolution(in_features, hidden)
        self.gc2 = GraphConvolution(hidden, num_classes)
        self.dropout = nn.Dropout(0.2)

    def forward(self, x):
        adj = normalized_adjacency(self.edge_index, self.num_nodes)
        h = self.dropout(F.relu(self.gc1(x, adj)))
        return F.log_softmax(self.gc2(h, adj), dim=-1)
