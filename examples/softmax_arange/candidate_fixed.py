"""FIXED candidate: row softmax with a constexpr, power-of-two block and a mask.

Demonstrates: the KL004 fix. The block is a `tl.constexpr` parameter set to
`triton.next_power_of_2(n_cols)` (128 for 100 columns); the padding lanes are
masked out and loaded as -inf so they do not change max or sum.
Fires:        nothing.
Must not:     KL004 (BLOCK_N is constexpr, and next_power_of_2 is a power of
              two by construction), KL005, KL006, KL007, KL008, KL001 / KL010.
Checked:      matches reference.py at atol = rtol = 1e-2 under TRITON_INTERPRET=1.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols,
                   BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        BLOCK_N = triton.next_power_of_2(n_cols)
        num_warps = 4 if BLOCK_N <= 2048 else 8
        softmax_kernel[(n_rows,)](
            out, x, x.stride(0), out.stride(0), n_cols,
            BLOCK_N=BLOCK_N,
            num_warps=num_warps,
        )
        return out
