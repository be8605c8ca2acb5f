"""WRONG candidate: autotuned fp16 GEMM + bias + ReLU with one config over the limit.

Demonstrates: KL006 inside `@triton.autotune`: the autotuner compiles every
config, and one of them asks for
(BLOCK_M*BLOCK_K + BLOCK_K*BLOCK_N) * 2 B (fp16) * num_stages
= (256*64 + 64*256) * 2 * 4 = 262,144 B per block, over the H100's
232,448 B. The other configs fit (they would fit even with fp32 operands:
98,304 B and 196,608 B). Operands are cast to fp16 for tensor cores,
accumulation stays fp32.
Fires:        KL006 shared-memory-over-limit, on the one triton.Config
              with BLOCK_M=256, BLOCK_N=256, BLOCK_K=64, num_stages=4 (only that
              config, not the other two).
Must not:     KL004, KL005, KL007, KL008, KL001 / KL010.
Error:        seen on an H100 (Triton 3.6): the autotuner catches the
              OutOfResources of that config while benchmarking (timing inf) and
              picks another (64x128x64 here), so the forward still works: the
              bad config is wasted tuning time. Pinned alone, it raises
              OutOfResources: out of resource: shared memory, Required: 262144,
              Hardware limit: 232448 (exactly the estimate). The other two
              compiled to 49,152 B and 98,304 B, also exactly the estimate.
Interpreter:  TRITON_INTERPRET=1 does not model shared memory, so every config
              runs and matches the reference (checked one config at a time).
              But with more than one config the autotuner tries to benchmark
              and Triton 3.9's interpreter has no driver for that:
              RuntimeError("0 active drivers ([]). There should only be one.").
              A CPU harness must stub the autotuner's do_bench (or pin one
              config) to run autotuned candidates at all.
Fix:          drop or shrink that config (e.g. num_stages=3 at 128x256x64 in
              fp16 = 147,456 B); candidate_fixed.py shows a plain launch that fits.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}, num_stages=3, num_warps=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64}, num_stages=4, num_warps=4),
        triton.Config({"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64}, num_stages=4, num_warps=8),
    ],
    key=["M", "N", "K"],
)
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
        acc += tl.dot(a, w)  # fp16 x fp16 -> fp32 accumulate
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
        # fp16 operands are what this example's shared-memory estimate is about, not a score.
        x16 = x.to(torch.float16)  # kernel-lsp: ignore[KL106]
        w16 = w.to(torch.float16)  # kernel-lsp: ignore[KL106]
        grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]), triton.cdiv(N, META["BLOCK_N"]))
        linear_bias_relu_kernel[grid](
            x16, w16, self.linear.bias, out,
            M, N, K,
            x16.stride(0), x16.stride(1),
            w16.stride(0), w16.stride(1),
            out.stride(0), out.stride(1),
        )
        return out
