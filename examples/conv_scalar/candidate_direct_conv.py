"""SLOW candidate: direct 3x3 convolution + bias + ReLU, scalar multiply-accumulate loops.

Demonstrates: the 0.11x VGG16 seed. One program per (image, output channel,
block of output pixels) walks `for ic / for ky / for kx`, loads a vector of
input pixels and ONE weight scalar per step and does `acc += x_vals * w_val`.
Correct, but no tl.dot anywhere: no tensor cores, and C_in*9 tiny dependent
loads per output tile.
Fires:        KL008 scalar-loop-no-dot (the nested ic/ky/kx loop with
              `acc += x_vals * w_val` in a kernel that has no tl.dot).
Must not:     KL004, KL005, KL006, KL007, KL001 / KL010 (one launch; the loops
              are inside the kernel and are not time loops).
Checked:      runs and matches reference.py at atol = rtol = 1e-2 under
              TRITON_INTERPRET=1; the problem is speed, not correctness.
              It is also the slowest example to interpret (N*C_out = 32
              programs x 72 loop steps: several seconds on an idle core).
              candidate_direct_conv_tile.py is the same mistake in tiled form.
Fix:          candidate_fixed.py (implicit GEMM with tl.dot, bias + ReLU fused).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_bias_relu_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    C_in, H, W, C_out, H_out, W_out,
    KH: tl.constexpr, KW: tl.constexpr, PAD: tl.constexpr,
    BLOCK_HW: tl.constexpr,
):
    pid_nc = tl.program_id(0)
    pid_hw = tl.program_id(1)
    n = pid_nc // C_out
    oc = pid_nc % C_out

    offs = pid_hw * BLOCK_HW + tl.arange(0, BLOCK_HW)
    mask_out = offs < H_out * W_out
    oh = offs // W_out
    ow = offs % W_out

    x_img = x_ptr + n * C_in * H * W
    w_oc = w_ptr + oc * C_in * KH * KW

    acc = tl.zeros((BLOCK_HW,), dtype=tl.float32)
    for ic in range(0, C_in):
        for ky in range(0, KH):
            ih = oh + ky - PAD
            row_ok = mask_out & (ih >= 0) & (ih < H)
            for kx in range(0, KW):
                iw = ow + kx - PAD
                x_vals = tl.load(x_img + (ic * H + ih) * W + iw,
                                 mask=row_ok & (iw >= 0) & (iw < W), other=0.0)
                w_val = tl.load(w_oc + (ic * KH + ky) * KW + kx)
                acc += x_vals * w_val

    acc += tl.load(b_ptr + oc)
    acc = tl.maximum(acc, 0.0)
    tl.store(out_ptr + (n * C_out + oc) * H_out * W_out + offs, acc, mask=mask_out)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        x = x.contiguous()
        w = self.conv.weight.contiguous()
        N, C_in, H, W = x.shape
        C_out, _, KH, KW = w.shape
        pad = self.conv.padding[0]
        H_out = H + 2 * pad - KH + 1
        W_out = W + 2 * pad - KW + 1
        out = torch.empty((N, C_out, H_out, W_out), device=x.device, dtype=x.dtype)
        BLOCK_HW = 256
        grid = (N * C_out, triton.cdiv(H_out * W_out, BLOCK_HW))
        conv2d_bias_relu_kernel[grid](
            x, w, self.conv.bias, out,
            C_in, H, W, C_out, H_out, W_out,
            KH=KH, KW=KW, PAD=pad,
            BLOCK_HW=BLOCK_HW,
            num_warps=4,
        )
        return out
