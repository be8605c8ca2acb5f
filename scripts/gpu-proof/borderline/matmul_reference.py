# A GPU-bound reference, in KernelBench's task format: one fp32 matrix product
# of a few milliseconds, so its time does not follow the host's launch speed.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


N = 4096


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
