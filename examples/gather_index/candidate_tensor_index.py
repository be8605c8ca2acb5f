"""WRONG candidate: embedding lookup that loads the table, then subscripts it with the ids.

Demonstrates: a Triton tensor cannot be indexed by another tensor. The kernel
loads the whole (small) table into registers and gathers rows with
`table[ids, :]`, as one would in NumPy/PyTorch. Triton only accepts `None`
and `:` as subscripts.
Fires:        KL007 tensor-indexed-by-tensor (on `table[ids, :]`: `table` and
              `ids` are both results of tl.load).
Must not:     KL004 (BLOCK_* are constexpr powers of two), KL005, KL006 (no dot,
              no pipelined loop), KL008, KL001 / KL010.
Error:        GPU compiler (seen on an H100 with Triton 3.6, and from Triton
              3.9's front end): CompilationError: at 19:11: <source, caret under
              `table[ids, :]`> unsupported tensor index: int64[constexpr[16]]
              (the seed run saw `int32[constexpr[64]]`).
              Interpreter: InterpreterError wrapping
              ValueError('unsupported tensor index: [<the 16 id values>]'): the
              same message, with the index tensor's values instead of its type.
Fix:          candidate_fixed.py (pointer arithmetic: tl.load(weight_ptr + ids * stride + cols)).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def embedding_kernel(
    ids_ptr, weight_ptr, out_ptr,
    n_tokens, num_embeddings, embedding_dim,
    stride_wv, stride_wd, stride_ot, stride_od,
    BLOCK_T: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid = tl.program_id(0)
    offs_t = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    offs_v = tl.arange(0, BLOCK_V)
    offs_d = tl.arange(0, BLOCK_D)
    mask_t = offs_t < n_tokens
    mask_d = offs_d < embedding_dim

    # whole embedding table in registers: (BLOCK_V, BLOCK_D)
    table = tl.load(weight_ptr + offs_v[:, None] * stride_wv + offs_d[None, :] * stride_wd,
                    mask=(offs_v[:, None] < num_embeddings) & mask_d[None, :], other=0.0)
    ids = tl.load(ids_ptr + offs_t, mask=mask_t, other=0)

    rows = table[ids, :]

    tl.store(out_ptr + offs_t[:, None] * stride_ot + offs_d[None, :] * stride_od, rows,
             mask=mask_t[:, None] & mask_d[None, :])


class ModelNew(nn.Module):
    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, ids):
        weight = self.embedding.weight
        flat_ids = ids.reshape(-1).contiguous()
        n_tokens = flat_ids.numel()
        num_embeddings, embedding_dim = weight.shape
        out = torch.empty((n_tokens, embedding_dim), device=weight.device, dtype=weight.dtype)
        BLOCK_T = 16
        grid = (triton.cdiv(n_tokens, BLOCK_T),)
        embedding_kernel[grid](
            flat_ids, weight, out,
            n_tokens, num_embeddings, embedding_dim,
            weight.stride(0), weight.stride(1), out.stride(0), out.stride(1),
            BLOCK_T=BLOCK_T,
            BLOCK_V=triton.next_power_of_2(num_embeddings),
            BLOCK_D=triton.next_power_of_2(embedding_dim),
            num_warps=4,
        )
        return out.view(*ids.shape, embedding_dim)
