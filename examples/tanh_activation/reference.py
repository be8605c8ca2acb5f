"""Reference: Linear layer followed by tanh (KernelBench level-2 style).

kernel-lsp example `tanh_activation`: the PyTorch model that
candidate_tl_tanh.py and candidate_fixed.py are checked against.
"""
import torch
import torch.nn as nn

BATCH = 64
IN_FEATURES = 128
OUT_FEATURES = 64


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.tanh(self.linear(x))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
