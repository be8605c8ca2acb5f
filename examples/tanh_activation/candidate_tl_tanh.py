"""WRONG candidate: fused Linear + bias + tanh that calls `tl.tanh`.

Demonstrates: `triton.language` has no `tanh` (still absent in Triton 3.9),
so the kernel dies before it runs.
Fires:        KL005 unknown-triton-function (on `tl.tanh`).
Must not:     KL004 (aranges use constexpr powers of two), KL006 (32x32x32
              fp32 tiles, ~24 KiB of shared memory), KL008 (uses tl.dot),
              KL001 / KL010 (one launch, no host loop).
Error:        GPU compiler and interpreter alike raise
              AttributeError("module 'triton.language' has no attribute 'tanh'").
              Seen on an H100 (Triton 3.6): CompilationError: at 27:10: with the
              source up to `out = tl.tanh(acc)` and a caret under `tl.tanh`.
              Interpreter (Triton 3.9, TRITON_INTERPRET=1): InterpreterError
              wrapping the same AttributeError.
Fix:          candidate_fixed.py (tanh(x) = 2 * sigmoid(2x) - 1).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_tanh_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    M, N, K,
    stride_xm, stride_xk,
    stride_wn, stride_wk,
    stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k
        a = tl.load(x_ptr + offs_m[:, None] * stride_xm + k[None, :] * stride_xk,
                    mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
        # W is (N, K): read it transposed as a (BLOCK_K, BLOCK_N) tile
        b = tl.load(w_ptr + k[:, None] * stride_wk + offs_n[None, :] * stride_wn,
                    mask=(k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)

    bias = tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0)
    acc = acc + bias[None, :]
    out = tl.tanh(acc)

    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, out,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        w = self.linear.weight
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=torch.float32)
        BLOCK_M, BLOCK_N, BLOCK_K = 32, 32, 32
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
        linear_tanh_kernel[grid](
            x, w, self.linear.bias, out,
            M, N, K,
            x.stride(0), x.stride(1),
            w.stride(0), w.stride(1),
            out.stride(0), out.stride(1),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
            num_warps=4,
        )
        return out
