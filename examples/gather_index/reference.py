"""Reference: embedding lookup (a gather of table rows by index).

kernel-lsp example `gather_index`: the PyTorch model the gather candidates are
checked against.
"""
import torch
import torch.nn as nn

BATCH = 4
SEQ_LEN = 16
NUM_EMBEDDINGS = 64
EMBEDDING_DIM = 32


class Model(nn.Module):
    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, ids):
        return self.embedding(ids)


def get_inputs():
    return [torch.randint(0, NUM_EMBEDDINGS, (BATCH, SEQ_LEN), dtype=torch.int64)]


def get_init_inputs():
    return [NUM_EMBEDDINGS, EMBEDDING_DIM]
