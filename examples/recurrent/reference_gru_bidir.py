# KernelBench level 3, 41_GRUBidirectional: reference for `kernel-lsp bench`. A 6-layer
# bidirectional nn.GRU (cuDNN on the GPU); forward(x, h0) returns the output sequence (seq, batch, 2 * hidden).
# Same interface and inputs as the task file (torch.rand), its shapes as
# module globals so `--set` can shrink them. gru_bidir_persistent.py is measured against
# this file; the GPU proof runs KernelBench's own task file. No kernel-lsp
# rule applies: there is no Triton code here.
import torch
import torch.nn as nn

batch_size = 10
seq_len = 512
input_size = 128
hidden_size = 256
num_layers = 6


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        super(Model, self).__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, bias, batch_first, dropout=0, bidirectional=True)

    def forward(self, x, h0):
        output, h_n = self.gru(x, h0)
        return output


def get_inputs():
    return [torch.rand(seq_len, batch_size, input_size), torch.rand((num_layers * 2, batch_size, hidden_size))]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
