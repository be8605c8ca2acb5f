# kernel-lsp: reference = reference_gru_bidir_hidden.py
# KernelBench 42_GRUBidirectionalHidden: the network of
# gru_bidir_persistent.py (one launch per layer, both directions side by
# side), returning the final states h_n that the kernel stores after each
# direction's last step. The kernel lives in gru_bidir_persistent.py beside
# this file (the benchmark harness puts this folder on sys.path).
# H100 (task shapes): 13.31 ms against 145.3 ms for nn.GRU (cuDNN): 10.9x;
# `kernel-lsp bench`: 10.8x. Max abs diff 6.0e-4, bit-identical over runs.
import torch.nn as nn

from gru_bidir_persistent import gru_bidir


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        super(ModelNew, self).__init__()
        self.batch_first = batch_first
        self.gru = nn.GRU(input_size, hidden_size, num_layers, bias, batch_first, dropout=0, bidirectional=True)

    def forward(self, x, h0):
        if self.batch_first:
            x = x.transpose(0, 1)
        _, h_n = gru_bidir(self.gru, x.contiguous(), h0)
        return h_n
