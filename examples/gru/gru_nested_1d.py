# KernelBench 39_GRU candidate: time loop inside the kernel, but one program
# per batch tile walks the whole hidden dimension tile by tile.
#
# Demonstrates the serialized tile loop from the seeds (42_GRUBidirectional-
# Hidden, 0.25x): the grid is 1-D, `(triton.cdiv(B, BLOCK_B),)`, and inside
# the time loop the kernel does `while n < H: ... n += BLOCK_N` with a
# `while k < H` reduction inside that. With B = 10 and BLOCK_B = 16 a single
# program runs 512 steps x 4 hidden tiles x 8 K tiles x 3 gates of tiny
# tl.dot's while the rest of the GPU idles. The fix is a 2-D grid over
# (batch tiles, hidden tiles) with `pid_n = tl.program_id(1)` -- which then
# needs a grid-wide barrier between steps (see gru_2d_race.py and
# gru_persistent.py).
#
# Expected: KL002 serialized-tile-loop (the `while n < H` loop; the grid has
# no axis over H). Must NOT fire: KL001 (one launch per layer), KL003 (each
# program only reads hidden rows it wrote itself), KL009 (the input
# projection is one torch.addmm per layer, outside the kernel).
# Correct: matches reference.py.
import torch
import torch.nn as nn
import triton
import triton.language as tl

batch_size = 10
seq_len = 512
input_size = 128
hidden_size = 256
num_layers = 6


@triton.jit
def gru_layer_kernel(
    gates_x_ptr,   # (T, B, 3H): x_t @ W_ih^T + b_ih for every step, precomputed
    w_hh_ptr,      # (3H, H)
    b_hh_ptr,      # (3H,)
    h_ptr,         # (T + 1, B, H): h_ptr[0] = h0, h_ptr[t + 1] = h_t
    T, B, H,
    BLOCK_B: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_b = tl.program_id(0)
    offs_b = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    mask_b = offs_b < B

    t = 0
    while t < T:
        h_prev_base = h_ptr + t * B * H
        h_next_base = h_ptr + (t + 1) * B * H
        gx_base = gates_x_ptr + t * B * 3 * H

        n = 0
        while n < H:
            offs_n = n + tl.arange(0, BLOCK_N)
            mask_n = offs_n < H
            mask_bn = mask_b[:, None] & mask_n[None, :]

            gx_ptrs = gx_base + offs_b[:, None] * 3 * H + offs_n[None, :]
            z_x = tl.load(gx_ptrs + H, mask=mask_bn, other=0.0)
            r_x = tl.load(gx_ptrs, mask=mask_bn, other=0.0)
            n_x = tl.load(gx_ptrs + 2 * H, mask=mask_bn, other=0.0)

            acc_r = tl.zeros((BLOCK_B, BLOCK_N), dtype=tl.float32)
            acc_z = tl.zeros((BLOCK_B, BLOCK_N), dtype=tl.float32)
            acc_n = tl.zeros((BLOCK_B, BLOCK_N), dtype=tl.float32)
            k = 0
            while k < H:
                offs_k = k + tl.arange(0, BLOCK_K)
                mask_k = offs_k < H
                h_chunk = tl.load(h_prev_base + offs_b[:, None] * H + offs_k[None, :],
                                  mask=mask_b[:, None] & mask_k[None, :], other=0.0)
                w_mask = mask_k[:, None] & mask_n[None, :]
                w_hr = tl.load(w_hh_ptr + offs_n[None, :] * H + offs_k[:, None], mask=w_mask, other=0.0)
                w_hz = tl.load(w_hh_ptr + (H + offs_n[None, :]) * H + offs_k[:, None], mask=w_mask, other=0.0)
                w_hn = tl.load(w_hh_ptr + (2 * H + offs_n[None, :]) * H + offs_k[:, None], mask=w_mask, other=0.0)
                acc_r += tl.dot(h_chunk, w_hr)
                acc_z += tl.dot(h_chunk, w_hz)
                acc_n += tl.dot(h_chunk, w_hn)
                k += BLOCK_K

            b_hr = tl.load(b_hh_ptr + offs_n, mask=mask_n, other=0.0)
            b_hz = tl.load(b_hh_ptr + H + offs_n, mask=mask_n, other=0.0)
            b_hn = tl.load(b_hh_ptr + 2 * H + offs_n, mask=mask_n, other=0.0)

            r = tl.sigmoid(r_x + acc_r + b_hr[None, :])
            z = tl.sigmoid(z_x + acc_z + b_hz[None, :])
            n_pre = n_x + r * (acc_n + b_hn[None, :])
            # tanh(x) = 2 * sigmoid(2x) - 1  (tl.tanh does not exist)
            n_gate = 2.0 * tl.sigmoid(2.0 * n_pre) - 1.0

            h_old = tl.load(h_prev_base + offs_b[:, None] * H + offs_n[None, :], mask=mask_bn, other=0.0)
            h_new = (1.0 - z) * n_gate + z * h_old
            tl.store(h_next_base + offs_b[:, None] * H + offs_n[None, :], h_new, mask=mask_bn)
            n += BLOCK_N

        # make this step's h visible to every thread of the program
        tl.debug_barrier()
        t += 1


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        super(ModelNew, self).__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.gru = nn.GRU(input_size, hidden_size, num_layers, bias, batch_first, dropout=0, bidirectional=False)

    def forward(self, x, h0):
        if self.batch_first:
            x = x.transpose(0, 1)
        steps, B, _ = x.shape
        H = self.hidden_size
        layer_input = x.contiguous()

        for layer in range(self.num_layers):
            w_ih = getattr(self.gru, f"weight_ih_l{layer}")
            w_hh = getattr(self.gru, f"weight_hh_l{layer}").contiguous()
            if self.bias:
                b_ih = getattr(self.gru, f"bias_ih_l{layer}")
                b_hh = getattr(self.gru, f"bias_hh_l{layer}").contiguous()
            else:
                b_ih = torch.zeros(3 * H, device=x.device, dtype=x.dtype)
                b_hh = torch.zeros(3 * H, device=x.device, dtype=x.dtype)

            # Input gates for all time steps in one GEMM (cuBLAS).
            gates_x = torch.addmm(b_ih, layer_input.reshape(steps * B, -1), w_ih.t()).view(steps, B, 3 * H)

            h_all = torch.empty((steps + 1, B, H), device=x.device, dtype=torch.float32)
            h_all[0] = h0[layer]

            BLOCK_B, BLOCK_N, BLOCK_K = 16, 64, 32
            grid = (triton.cdiv(B, BLOCK_B),)
            gru_layer_kernel[grid](
                gates_x, w_hh, b_hh, h_all,
                steps, B, H,
                BLOCK_B=BLOCK_B, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                num_warps=4,
            )
            layer_input = h_all[1:]

        output = layer_input
        if self.batch_first:
            output = output.transpose(0, 1)
        return output


def get_inputs():
    return [torch.randn(seq_len, batch_size, input_size), torch.randn(num_layers, batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
