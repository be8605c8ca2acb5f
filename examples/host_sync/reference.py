"""Reference: Sinkhorn normalization (a fixed number of row/column normalizations).

kernel-lsp example `host_sync`: turns a batch of score matrices into
(approximately) doubly stochastic ones, as in optimal-transport / matching
layers. The iteration count is a constructor argument, not a sequence length.
"""
import torch
import torch.nn as nn

BATCH = 4
N = 32
N_ITERS = 10


class Model(nn.Module):
    def __init__(self, n_iters):
        super().__init__()
        self.n_iters = n_iters

    def forward(self, scores):
        p = torch.exp(scores)
        for _ in range(self.n_iters):
            p = p / p.sum(dim=-1, keepdim=True)
            p = p / p.sum(dim=-2, keepdim=True)
        return p


def get_inputs():
    return [torch.randn(BATCH, N, N)]


def get_init_inputs():
    return [N_ITERS]
