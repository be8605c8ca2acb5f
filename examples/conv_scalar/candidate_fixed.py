"""FIXED candidate: 3x3 convolution + bias + ReLU as an implicit GEMM with tl.dot.

Demonstrates: the KL008 fix. The convolution is a GEMM
out[M, C_out] = im2col(x)[M, K] @ W^T[K, C_out] with M = N*H_out*W_out and
K = C_in*KH*KW; the im2col tile is gathered on the fly from x (no buffer),
the weight is read as a (K, C_out) tile, and tl.dot does the multiply-
accumulate (tensor cores on a GPU). Bias and ReLU are fused into the epilogue,
like the 0.71x VGG16 seed (which kept PyTorch's conv and fused bias + ReLU
into a Triton GEMM).
Fires:        nothing.
Must not:     KL008 (there is a tl.dot; the only loop is the K loop around it),
              KL004, KL005, KL006 ((64*32 + 32*BLOCK_N) * 4 B * 3 stages: 30,720 B
              at the default 16 channels, 49,152 B at BLOCK_N = 64),
              KL007, KL001 / KL010.
Checked:      matches reference.py at atol = rtol = 1e-2 under TRITON_INTERPRET=1,
              and on an H100 (Triton 3.6; 30,720 B shared, max abs diff 1.8e-3
              from TF32 dot).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_implicit_gemm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    N, C_in, H, W, C_out, H_out, W_out,
    KH: tl.constexpr, KW: tl.constexpr, PAD: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)

    M_total = N * H_out * W_out
    K_total = C_in * KH * KW

    # rows of the implicit GEMM: output pixels (n, oh, ow)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    mask_m = offs_m < M_total
    n_idx = offs_m // (H_out * W_out)
    hw = offs_m % (H_out * W_out)
    oh = hw // W_out
    ow = hw % W_out

    # columns: output channels
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = offs_n < C_out

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K_total, BLOCK_K):
        # reduction index k -> (ic, ky, kx), same order as weight.view(C_out, -1)
        offs_k = k0 + tl.arange(0, BLOCK_K)
        mask_k = offs_k < K_total
        ic = offs_k // (KH * KW)
        r = offs_k % (KH * KW)
        ky = r // KW
        kx = r % KW

        ih = oh[:, None] + ky[None, :] - PAD
        iw = ow[:, None] + kx[None, :] - PAD
        a_mask = (mask_m[:, None] & mask_k[None, :]
                  & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W))
        a = tl.load(x_ptr + ((n_idx[:, None] * C_in + ic[None, :]) * H + ih) * W + iw,
                    mask=a_mask, other=0.0)
        b = tl.load(w_ptr + offs_n[None, :] * K_total + offs_k[:, None],
                    mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        acc += tl.dot(a, b)

    bias = tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)
    acc += bias[None, :]
    acc = tl.maximum(acc, 0.0)

    out_ptrs = out_ptr + ((n_idx[:, None] * C_out + offs_n[None, :]) * H_out + oh[:, None]) * W_out + ow[:, None]
    tl.store(out_ptrs, acc, mask=mask_m[:, None] & mask_n[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        x = x.contiguous()
        w = self.conv.weight.contiguous()  # (C_out, C_in, KH, KW) == (C_out, K) row-major
        N, C_in, H, W = x.shape
        C_out, _, KH, KW = w.shape
        pad = self.conv.padding[0]
        H_out = H + 2 * pad - KH + 1
        W_out = W + 2 * pad - KW + 1
        out = torch.empty((N, C_out, H_out, W_out), device=x.device, dtype=x.dtype)
        BLOCK_M, BLOCK_K = 64, 32
        BLOCK_N = max(16, min(64, triton.next_power_of_2(C_out)))  # tl.dot needs >= 16
        grid = (triton.cdiv(N * H_out * W_out, BLOCK_M), triton.cdiv(C_out, BLOCK_N))
        conv2d_implicit_gemm_kernel[grid](
            x, w, self.conv.bias, out,
            N, C_in, H, W, C_out, H_out, W_out,
            KH=KH, KW=KW, PAD=pad,
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
            num_warps=4, num_stages=3,
        )
        return out
