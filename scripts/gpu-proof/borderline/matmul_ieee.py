# A tiled Triton matrix product in IEEE fp32 (no TF32), for matmul_reference.py:
# correct at KernelBench's fp32 tolerance, and GPU-bound like its reference.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, n, BLOCK_K):
        a = tl.load(a_ptr + rows[:, None] * n + (k + ks)[None, :])
        b = tl.load(b_ptr + (k + ks)[:, None] * n + cols[None, :])
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rows[:, None] * n + cols[None, :], acc)


def matmul(a, b):
    n = a.shape[0]
    assert a.shape == b.shape == (n, n) and n % 128 == 0
    a, b = a.contiguous(), b.contiguous()
    c = torch.empty_like(a)
    grid = (n // 128, n // 128)
    matmul_kernel[grid](a, b, c, n, BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=8, num_stages=3)
    return c


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return matmul(a, b)
