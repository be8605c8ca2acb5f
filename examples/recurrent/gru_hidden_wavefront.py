# kernel-lsp: reference = reference_gru_hidden.py
# KernelBench 40_GRUHidden: the network of gru_wavefront.py (one persistent
# wavefront launch for all layers), returning the final states h_n that the
# kernel stores at each layer's last step. The kernel lives in
# gru_wavefront.py beside this file (the benchmark harness puts this folder
# on sys.path).
# H100 (task shapes): 2.32 ms against 58.2 ms for nn.GRU (cuDNN): 25.1x;
# `kernel-lsp bench`: 29.7x. Max abs diff 2.9e-4, bit-identical over runs.
import torch.nn as nn

from gru_wavefront import gru_wavefront


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        super(ModelNew, self).__init__()
        self.batch_first = batch_first
        self.gru = nn.GRU(input_size, hidden_size, num_layers, bias, batch_first, dropout=0, bidirectional=False)

    def forward(self, x, h0):
        if self.batch_first:
            x = x.transpose(0, 1)
        _, h_n = gru_wavefront(self.gru, x.contiguous(), h0)
        return h_n
