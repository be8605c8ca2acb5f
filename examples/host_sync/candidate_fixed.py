"""FIXED candidate: Sinkhorn without the per-iteration host sync.

Demonstrates: the minimal KL010 fix: the divergence guard moves out of the
loop and runs once per forward. Inside the loop the host only enqueues
launches, so the CPU runs ahead of the GPU and launch latency overlaps with
execution. It still launches 1 + 2 * n_iters kernels per forward;
candidate_fused.py goes further (one launch, no guard).
Fires:        nothing.
Must not:     KL010 (the one `.item()` is after the loop, not in it), KL001
              (loop over a constructor iteration count, not time steps),
              KL004, KL005, KL006, KL007, KL008.
Checked:      matches reference.py at atol = rtol = 1e-2 under TRITON_INTERPRET=1.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def exp_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.exp(x), mask=mask)


@triton.jit
def row_normalize_kernel(p_ptr, n_rows, n, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    # BLOCK_R rows of the (B*N, N) view per program
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n)
    ptrs = p_ptr + rows[:, None] * n + cols[None, :]
    p = tl.load(ptrs, mask=mask, other=0.0)
    row_sum = tl.sum(p, axis=1)
    tl.store(ptrs, p / row_sum[:, None], mask=mask)


@triton.jit
def col_normalize_kernel(p_ptr, n, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr):
    # one program per (matrix, block of BLOCK_C columns)
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    rows = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n) & (cols[None, :] < n)
    ptrs = p_ptr + b * n * n + rows[:, None] * n + cols[None, :]
    p = tl.load(ptrs, mask=mask, other=0.0)
    col_sum = tl.sum(p, axis=0)
    tl.store(ptrs, p / col_sum[None, :], mask=mask)


class ModelNew(nn.Module):
    def __init__(self, n_iters):
        super().__init__()
        self.n_iters = n_iters

    def forward(self, scores):
        scores = scores.contiguous()
        B, n, _ = scores.shape
        p = torch.empty_like(scores)
        numel = scores.numel()
        BLOCK = 1024
        exp_kernel[(triton.cdiv(numel, BLOCK),)](scores, p, numel, BLOCK=BLOCK)

        BLOCK_N = triton.next_power_of_2(n)
        BLOCK_R, BLOCK_C = 16, 16
        row_grid = (triton.cdiv(B * n, BLOCK_R),)
        col_grid = (B, triton.cdiv(n, BLOCK_C))
        for _ in range(self.n_iters):
            row_normalize_kernel[row_grid](p, B * n, n, BLOCK_R=BLOCK_R, BLOCK_N=BLOCK_N, num_warps=4)
            col_normalize_kernel[col_grid](p, n, BLOCK_N=BLOCK_N, BLOCK_C=BLOCK_C, num_warps=4)
        # one check per forward, after all launches are queued
        if not torch.isfinite(p).all().item():
            raise RuntimeError("Sinkhorn diverged")
        return p
