# KernelBench 35_LTSM: reference. A 6-layer unidirectional nn.LSTM (cuDNN on
# the GPU, batch_first) followed by a Linear on the last step's output;
# forward(x, h0, c0) returns fc(output[:, -1, :]), shape (batch, output_size).
# Deviation from the KernelBench file: the initial states are inputs here
# (the original draws them in __init__ and passes h0 as c0). lstm_wavefront.py
# is measured against this file. No kernel-lsp rule applies: there is no
# Triton code here.
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
        out, _ = self.lstm(x, (h0, c0))  # out: (batch, seq, hidden)
        return self.fc(out[:, -1, :])


def get_inputs():
    return [torch.randn(batch_size, sequence_length, input_size),
            torch.randn(num_layers, batch_size, hidden_size),
            torch.randn(num_layers, batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers, output_size, dropout]
