"""Reference: row-wise softmax (KernelBench level-1 style, 23_Softmax shape scaled down).

kernel-lsp example `softmax_arange`. N_COLS = 100 is deliberately not a power
of two, so a correct kernel needs a padded constexpr block plus a mask.
"""
import torch
import torch.nn as nn

BATCH = 32
N_COLS = 100


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(BATCH, N_COLS)]


def get_init_inputs():
    return []
