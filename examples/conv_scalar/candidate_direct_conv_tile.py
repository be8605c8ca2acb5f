"""SLOW candidate: direct 3x3 convolution + bias + ReLU, vector outer-product MAC loops.

Demonstrates: the other common shape of the same mistake. Each program owns a
tile of output pixels x output channels, and the nested `for ic / for ky /
for kx` loop does a rank-1 update `acc += x_vals[:, None] * w_vals[None, :]`
on CUDA cores. It looks "tiled", but there is still no tl.dot, so no tensor
cores; C_in*KH*KW tiny loads per tile.
Fires:        KL008 scalar-loop-no-dot (nested ic/ky/kx loop, `acc += x * w`
              from tl.loads, no tl.dot in the kernel).
Must not:     KL004, KL005, KL006, KL007, KL001 / KL010.
Checked:      runs and matches reference.py at atol = rtol = 1e-2 under
              TRITON_INTERPRET=1 (and, with 16x fewer programs than
              candidate_direct_conv.py, runs in about a second there).
Fix:          candidate_fixed.py (implicit GEMM with tl.dot).
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
    BLOCK_HW: tl.constexpr, BLOCK_OC: tl.constexpr,
):
    n = tl.program_id(0)
    pid_hw = tl.program_id(1)
    pid_oc = tl.program_id(2)

    offs_hw = pid_hw * BLOCK_HW + tl.arange(0, BLOCK_HW)
    offs_oc = pid_oc * BLOCK_OC + tl.arange(0, BLOCK_OC)
    mask_hw = offs_hw < H_out * W_out
    mask_oc = offs_oc < C_out
    oh = offs_hw // W_out
    ow = offs_hw % W_out

    acc = tl.zeros((BLOCK_HW, BLOCK_OC), dtype=tl.float32)
    for ic in range(C_in):
        for ky in range(KH):
            for kx in range(KW):
                ih = oh + ky - PAD
                iw = ow + kx - PAD
                m = mask_hw & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                x_vals = tl.load(x_ptr + ((n * C_in + ic) * H + ih) * W + iw, mask=m, other=0.0)
                w_vals = tl.load(w_ptr + ((offs_oc * C_in + ic) * KH + ky) * KW + kx,
                                 mask=mask_oc, other=0.0)
                acc += x_vals[:, None] * w_vals[None, :]

    bias = tl.load(b_ptr + offs_oc, mask=mask_oc, other=0.0)
    acc += bias[None, :]
    acc = tl.maximum(acc, 0.0)
    out_ptrs = out_ptr + (n * C_out + offs_oc[None, :]) * H_out * W_out + offs_hw[:, None]
    tl.store(out_ptrs, acc, mask=mask_hw[:, None] & mask_oc[None, :])


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
        BLOCK_HW, BLOCK_OC = 256, 16
        grid = (N, triton.cdiv(H_out * W_out, BLOCK_HW), triton.cdiv(C_out, BLOCK_OC))
        conv2d_bias_relu_kernel[grid](
            x, w, self.conv.bias, out,
            C_in, H, W, C_out, H_out, W_out,
            KH=KH, KW=KW, PAD=pad,
            BLOCK_HW=BLOCK_HW, BLOCK_OC=BLOCK_OC,
            num_warps=4,
        )
        return out
