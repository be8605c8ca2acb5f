"""FIXED candidate: embedding lookup by pointer arithmetic.

Demonstrates: the KL007 fix. Instead of loading the table and subscripting it
with the ids, the ids become part of the address: each program loads the ids
of its tokens and then exactly the rows it needs,
`tl.load(weight_ptr + ids[:, None] * stride_wv + offs_d[None, :] * stride_wd)`.
It also no longer needs the whole table in registers, so it scales to real
vocabularies.
Fires:        nothing.
Must not:     KL007 (no tensor subscripted by a tensor; `ids[:, None]` is a
              plain expand), KL004, KL005, KL006, KL008, KL001 / KL010.
Checked:      matches reference.py exactly (max abs diff 0) under TRITON_INTERPRET=1.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def embedding_kernel(
    ids_ptr, weight_ptr, out_ptr,
    n_tokens, embedding_dim,
    stride_wv, stride_wd, stride_ot, stride_od,
    BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid_t = tl.program_id(0)
    pid_d = tl.program_id(1)
    offs_t = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)
    offs_d = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    mask_t = offs_t < n_tokens
    mask_d = offs_d < embedding_dim
    mask = mask_t[:, None] & mask_d[None, :]

    ids = tl.load(ids_ptr + offs_t, mask=mask_t, other=0)
    rows = tl.load(weight_ptr + ids[:, None] * stride_wv + offs_d[None, :] * stride_wd,
                   mask=mask, other=0.0)
    tl.store(out_ptr + offs_t[:, None] * stride_ot + offs_d[None, :] * stride_od, rows, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, ids):
        weight = self.embedding.weight
        flat_ids = ids.reshape(-1).contiguous()
        n_tokens = flat_ids.numel()
        embedding_dim = weight.shape[1]
        out = torch.empty((n_tokens, embedding_dim), device=weight.device, dtype=weight.dtype)
        BLOCK_T = 16
        BLOCK_D = min(triton.next_power_of_2(embedding_dim), 128)
        grid = (triton.cdiv(n_tokens, BLOCK_T), triton.cdiv(embedding_dim, BLOCK_D))
        embedding_kernel[grid](
            flat_ids, weight, out,
            n_tokens, embedding_dim,
            weight.stride(0), weight.stride(1), out.stride(0), out.stride(1),
            BLOCK_T=BLOCK_T, BLOCK_D=BLOCK_D,
            num_warps=4,
        )
        return out.view(*ids.shape, embedding_dim)
