"""WRONG candidate: row softmax whose `tl.arange` bound is a runtime argument.

Demonstrates: the column count arrives as an ordinary (runtime) kernel
argument, is renamed (`H = N_COLS`) and then used as the `tl.arange` bound.
Triton needs arange bounds known at compile time, so this never compiles.
The alias is the point: a check that only looks for `tl.arange(0, N_COLS)`
misses `tl.arange(0, H)`.
Fires:        KL004 arange-non-constexpr (on `tl.arange(0, H)`; H comes from the
              non-constexpr parameter N_COLS).
Must not:     KL005, KL006, KL007, KL008 (a row reduction, no MAC loop),
              KL001 / KL010 (one launch, no host loop).
Error:        GPU compiler (seen on an H100 with Triton 3.6, and from Triton
              3.9's front end): CompilationError: at 4:11: <source up to the
              line, caret under `tl.arange`> arange's arguments must be of type
              tl.constexpr (line:col relative to the kernel's `def`).
              Interpreter (TRITON_INTERPRET=1): InterpreterError wrapping
              ValueError("arange's arguments must be of type tl.constexpr").
Fix:          candidate_fixed.py (BLOCK_N: tl.constexpr = next_power_of_2(n_cols) + mask).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, N_COLS):
    row = tl.program_id(0)
    H = N_COLS
    cols = tl.arange(0, H)
    x = tl.load(in_ptr + row * in_row_stride + cols)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, num / den)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(n_rows,)](
            out, x, x.stride(0), out.stride(0), n_cols,
            num_warps=4,
        )
        return out
