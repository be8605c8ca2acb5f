"""Reference: Linear (GEMM + bias) followed by ReLU (KernelBench level-2 style).

kernel-lsp example `matmul_smem`: the PyTorch model the three tiled-GEMM
candidates are checked against. Sizes are CPU-interpreter sized; on a GPU a
harness would raise them (e.g. 4096 x 4096 x 4096).
"""
import torch
import torch.nn as nn

BATCH = 128
IN_FEATURES = 128
OUT_FEATURES = 128


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
