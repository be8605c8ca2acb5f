"""WRONG candidate: embedding lookup, one program per (token block, feature), gathering with `col[ids]`.

Demonstrates: the 1-D form of the same mistake. Each program loads one column
of the table (all num_embeddings values of feature d) and picks the entries
for its tokens with `col[ids]`.
Fires:        KL007 tensor-indexed-by-tensor (on `col[ids]`).
Must not:     KL004, KL005, KL006, KL008, KL001 / KL010.
Error:        GPU compiler (seen on an H100 with Triton 3.6, and from Triton
              3.9's front end): CompilationError: at 16:11: <caret under
              `col[ids]`> Did you forget to add @triton.jit ? (`_semantic`
              argument must be provided outside of JIT functions.)
              A misleading message for this mistake (the bare-tensor subscript
              is not routed through the tensor-index check; the 2-D form gets
              the real `unsupported tensor index`), which is why a static rule
              that names the problem helps.
              Interpreter: it fails too, with yet another message:
              InterpreterError wrapping TypeError("'int' object is not
              iterable").
Fix:          candidate_fixed.py.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def embedding_column_kernel(
    ids_ptr, weight_ptr, out_ptr,
    n_tokens, num_embeddings,
    stride_wv, stride_wd, stride_ot, stride_od,
    BLOCK_T: tl.constexpr, BLOCK_V: tl.constexpr,
):
    pid_t = tl.program_id(0)
    d = tl.program_id(1)
    offs_t = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)
    offs_v = tl.arange(0, BLOCK_V)
    mask_t = offs_t < n_tokens

    col = tl.load(weight_ptr + offs_v * stride_wv + d * stride_wd,
                  mask=offs_v < num_embeddings, other=0.0)
    ids = tl.load(ids_ptr + offs_t, mask=mask_t, other=0)
    vals = col[ids]
    tl.store(out_ptr + offs_t * stride_ot + d * stride_od, vals, mask=mask_t)


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
        grid = (triton.cdiv(n_tokens, BLOCK_T), embedding_dim)
        embedding_column_kernel[grid](
            flat_ids, weight, out,
            n_tokens, num_embeddings,
            weight.stride(0), weight.stride(1), out.stride(0), out.stride(1),
            BLOCK_T=BLOCK_T, BLOCK_V=triton.next_power_of_2(num_embeddings),
            num_warps=1,
        )
        return out.view(*ids.shape, embedding_dim)
