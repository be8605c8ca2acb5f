"""Reference: 3x3 convolution (padding 1) followed by ReLU, a VGG block layer.

kernel-lsp example `conv_scalar` (the 11_VGG16 seed run, scaled down to a
CPU-interpreter size: batch 2, 8 -> 16 channels, 16x16).
"""
import torch
import torch.nn as nn

BATCH = 2
IN_CHANNELS = 8
OUT_CHANNELS = 16
HEIGHT = 16
WIDTH = 16
KERNEL_SIZE = 3


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE]
