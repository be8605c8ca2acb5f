# KernelBench 41_GRUBidirectional: reference. A 6-layer bidirectional nn.GRU
# (cuDNN on the GPU); forward(x, h0) returns the output sequence
# (seq, batch, 2 * hidden): forward and reverse halves concatenated on the
# last dimension. gru_bidir_python_loop.py is measured against this file.
# No kernel-lsp rule applies: there is no Triton code here.
import torch
import torch.nn as nn

batch_size = 10
seq_len = 512
input_size = 128
hidden_size = 256
num_layers = 6


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        """
        :param input_size: The number of expected features in the input x
        :param hidden_size: The number of features in the hidden state h
        :param num_layers: Number of recurrent layers (default: 3)
        :param bias: If False, then the layer does not use bias weights b_ih and b_hh (default: True)
        :param batch_first: If True, the input and output tensors are provided as (batch, seq, feature) (default: False)
        """
        super(Model, self).__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, bias, batch_first, dropout=0, bidirectional=True)

    def forward(self, x, h0):
        """
        :param x: The input tensor, shape (seq_len, batch_size, input_size) if batch_first=False
        :param h0: The initial hidden state, shape (num_layers * 2, batch_size, hidden_size)
        :return: output, shape (seq_len, batch_size, 2 * hidden_size)
        """
        output, h_n = self.gru(x, h0)
        return output


def get_inputs():
    return [torch.randn(seq_len, batch_size, input_size), torch.randn(num_layers * 2, batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
