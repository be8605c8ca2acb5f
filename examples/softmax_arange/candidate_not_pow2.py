"""WRONG candidate: row softmax with a constexpr block that is not a power of two.

Demonstrates: the bound of `tl.arange` is a `tl.constexpr` this time, but the
launch passes BLOCK_N=100 (the exact column count). Triton's arange needs a
power-of-two range, so this still does not compile.
Fires:        KL004 arange-non-constexpr (power-of-two half: BLOCK_N=100 at the
              launch site flows into `tl.arange(0, BLOCK_N)`).
Must not:     KL005, KL006, KL007, KL008, KL001 / KL010.
Error:        GPU compiler (seen on an H100, Triton 3.6): CompilationError:
              at 4:11: ... arange's range must be a power of 2.
              Interpreter: InterpreterError wrapping the same
              ValueError("arange's range must be a power of 2").
Fix:          candidate_fixed.py (BLOCK_N = triton.next_power_of_2(n_cols) = 128,
              with a mask on cols < n_cols).
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
        softmax_kernel[(n_rows,)](
            out, x, x.stride(0), out.stride(0), n_cols,
            BLOCK_N=100,  # one program covers a whole row of 100 columns
            num_warps=4,
        )
        return out
