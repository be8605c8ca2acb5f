# KernelBench level 3, 36_LSTMHn: reference for `kernel-lsp bench`. A 6-layer
# unidirectional nn.LSTM (cuDNN on the GPU, batch_first) and a Linear on the
# last step; forward(x, h0, c0) returns the final hidden states h_n.
# Same interface and inputs as the task file (torch.rand), its shapes as
# module globals so `--set` can shrink them. lstm_hn_wavefront.py is measured against
# this file; the GPU proof runs KernelBench's own task file. No kernel-lsp
# rule applies: there is no Triton code here.
import torch
import torch.nn as nn

batch_size = 10
sequence_length = 512
input_size = 128
hidden_size = 256
num_layers = 6
output_size = 10
dropout = 0.0


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, output_size, dropout=0.0):
        super(Model, self).__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, dropout=dropout,
                            bidirectional=False)
        self.fc = nn.Linear(hidden_size, output_size)

    def forward(self, x, h0, c0):
        out, (h_n, c_n) = self.lstm(x, (h0, c0))
        return h_n


def get_inputs():
    return [torch.rand(batch_size, sequence_length, input_size),
            torch.rand((num_layers, batch_size, hidden_size)),
            torch.rand((num_layers, batch_size, hidden_size))]


def get_init_inputs():
    return [input_size, hidden_size, num_layers, output_size, dropout]
