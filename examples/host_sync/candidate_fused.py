"""FIXED candidate (fused): all Sinkhorn iterations inside one kernel, one launch per forward.

Demonstrates: the best fix for the KL010 example: no host loop at all. Each
program owns one N x N matrix, keeps it in registers and runs the n_iters
row/column normalisations in an in-kernel loop, then stores once. 1 launch
instead of 1 + 2 * n_iters, no host sync, one read and one write of p.
Programs never touch each other's matrix, so no grid-wide barrier is needed.
Fires:        nothing.
Must not:     KL010, KL001 (no launch inside a Python loop), KL003 (the
              in-kernel loop only reads the program's own registers),
              KL004 (BLOCK_N constexpr, next_power_of_2), KL005, KL006
              (no tl.dot / pipelined loads), KL007, KL008.
Checked:      matches reference.py at atol = rtol = 1e-2 under TRITON_INTERPRET=1.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sinkhorn_kernel(x_ptr, out_ptr, n, n_iters, BLOCK_N: tl.constexpr):
    b = tl.program_id(0)
    rows = tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n) & (cols[None, :] < n)
    offs = b * n * n + rows[:, None] * n + cols[None, :]

    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    p = tl.where(mask, tl.exp(x), 0.0)
    for _ in range(n_iters):
        row_sum = tl.sum(p, axis=1)
        p = p / tl.where(row_sum > 0, row_sum, 1.0)[:, None]   # padded rows stay 0
        col_sum = tl.sum(p, axis=0)
        p = p / tl.where(col_sum > 0, col_sum, 1.0)[None, :]
    tl.store(out_ptr + offs, p, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, n_iters):
        super().__init__()
        self.n_iters = n_iters

    def forward(self, scores):
        scores = scores.contiguous()
        B, n, _ = scores.shape
        out = torch.empty_like(scores)
        BLOCK_N = triton.next_power_of_2(n)
        sinkhorn_kernel[(B,)](
            scores, out, n, self.n_iters,
            BLOCK_N=BLOCK_N,
            num_warps=4 if BLOCK_N <= 64 else 8,
        )
        return out
