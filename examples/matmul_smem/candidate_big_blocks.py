"""WRONG candidate: fused GEMM + bias + ReLU launched with tiles far too big.

Demonstrates: a correct kernel whose launch config cannot fit in shared
memory. Pipelined tl.dot operands need about
(BLOCK_M*BLOCK_K + BLOCK_K*BLOCK_N) * bytes * num_stages
= (256*128 + 128*256) * 4 B (fp32) * 4 stages = 1,048,576 B per block,
against 232,448 B (227 KiB) on an H100 and 101,376 B on the RTX 6000 class
card of the seed runs.
Fires:        KL006 shared-memory-over-limit (on the launch: BLOCK_M=256,
              BLOCK_N=256, BLOCK_K=128, num_stages=4, fp32 operands).
Must not:     KL004 (constexpr power-of-two aranges), KL005, KL007,
              KL008 (uses tl.dot), KL001 / KL010 (one launch).
Error:        seen on an H100 (Triton 3.6): triton.runtime.errors.OutOfResources:
              out of resource: shared memory, Required: 1048576, Hardware limit:
              232448. Reducing block sizes or `num_stages` may help.
              (Required is exactly the estimate above.)
              The interpreter does not model shared memory: under
              TRITON_INTERPRET=1 this candidate RUNS and matches the reference
              (that is expected; the static rule is what catches it on CPU).
Fix:          candidate_fixed.py (128x128x32, 3 stages: 98,304 B).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_bias_relu_kernel(
    a_ptr, w_ptr, bias_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak,
    stride_wn, stride_wk,
    stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    w_ptrs = w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :] * stride_wn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_remaining = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_remaining), other=0.0)
        w = tl.load(w_ptrs, mask=(offs_k[:, None] < k_remaining) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, w)
        a_ptrs += BLOCK_K * stride_ak
        w_ptrs += BLOCK_K * stride_wk

    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0)
    acc += bias[None, :]
    acc = tl.maximum(acc, 0.0)

    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        w = self.linear.weight  # (N, K), used as W^T without a copy
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        # Big tiles for maximum data reuse.
        BLOCK_M, BLOCK_N, BLOCK_K = 256, 256, 128
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
        linear_bias_relu_kernel[grid](
            x, w, self.linear.bias, out,
            M, N, K,
            x.stride(0), x.stride(1),
            w.stride(0), w.stride(1),
            out.stride(0), out.stride(1),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
            num_warps=8, num_stages=4,
        )
        return out
