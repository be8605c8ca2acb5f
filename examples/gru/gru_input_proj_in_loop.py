# KernelBench 39_GRU candidate: persistent per batch tile, but the input
# projection is recomputed inside the time loop.
#
# Demonstrates KL009: one program per batch tile owns the whole hidden state
# (BLOCK_H = next_power_of_2(H), grid `(triton.cdiv(B, BLOCK_B),)`), so no
# hidden-tile loop and no grid barrier are needed -- but every step loads x_t
# and does x_t @ W_ih^T with tl.dot next to h @ W_hh^T. The input side does
# not depend on h: the fast kernels in the seeds computed it for all steps as
# one (seq*B, in) @ (in, 3H) GEMM before the recurrence, leaving only the
# h @ W_hh^T product on the serial path.
#
# Expected: KL009 input-projection-in-time-loop. Must NOT fire: KL001 (one
# launch per layer), KL002 (the only inner loops are K reductions; the output
# hidden dimension is one whole tile), KL003 (each program reads back only
# the batch rows it wrote). Correct: matches reference.py.
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
def gru_fused_layer_kernel(
    x_ptr,                 # (steps, B, IN) layer input
    h0_ptr,                # (B, H)
    out_ptr,               # (steps, B, H)
    w_ih_ptr, w_hh_ptr,    # (3H, IN), (3H, H)
    b_ih_ptr, b_hh_ptr,    # (3H,), (3H,)
    steps, B, IN, H,
    BLOCK_B: tl.constexpr,
    BLOCK_H: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_B + tl.arange(0, BLOCK_B)
    cols = tl.arange(0, BLOCK_H)
    rk = tl.arange(0, BLOCK_K)
    row_mask = rows < B
    col_mask = cols < H
    tile_mask = row_mask[:, None] & col_mask[None, :]

    b_ir = tl.load(b_ih_ptr + cols, mask=col_mask, other=0.0)
    b_iz = tl.load(b_ih_ptr + H + cols, mask=col_mask, other=0.0)
    b_in = tl.load(b_ih_ptr + 2 * H + cols, mask=col_mask, other=0.0)
    b_hr = tl.load(b_hh_ptr + cols, mask=col_mask, other=0.0)
    b_hz = tl.load(b_hh_ptr + H + cols, mask=col_mask, other=0.0)
    b_hn = tl.load(b_hh_ptr + 2 * H + cols, mask=col_mask, other=0.0)

    for t in range(steps):
        if t > 0:
            h_base = out_ptr + (t - 1) * B * H
        else:
            h_base = h0_ptr
        x_base = x_ptr + t * B * IN

        acc_r = tl.zeros((BLOCK_B, BLOCK_H), dtype=tl.float32)
        acc_z = tl.zeros((BLOCK_B, BLOCK_H), dtype=tl.float32)
        acc_in = tl.zeros((BLOCK_B, BLOCK_H), dtype=tl.float32)
        acc_hn = tl.zeros((BLOCK_B, BLOCK_H), dtype=tl.float32)

        # x_t @ W_ih^T
        for k in range(0, IN, BLOCK_K):
            kk = k + rk
            x_t = tl.load(x_base + rows[:, None] * IN + kk[None, :],
                          mask=row_mask[:, None] & (kk[None, :] < IN), other=0.0)
            w_mask = (kk[:, None] < IN) & col_mask[None, :]
            w_r = tl.load(w_ih_ptr + cols[None, :] * IN + kk[:, None], mask=w_mask, other=0.0)
            w_z = tl.load(w_ih_ptr + (H + cols[None, :]) * IN + kk[:, None], mask=w_mask, other=0.0)
            w_n = tl.load(w_ih_ptr + (2 * H + cols[None, :]) * IN + kk[:, None], mask=w_mask, other=0.0)
            acc_r += tl.dot(x_t, w_r)
            acc_z += tl.dot(x_t, w_z)
            acc_in += tl.dot(x_t, w_n)

        # h_{t-1} @ W_hh^T
        for k in range(0, H, BLOCK_K):
            kk = k + rk
            h_k = tl.load(h_base + rows[:, None] * H + kk[None, :],
                          mask=row_mask[:, None] & (kk[None, :] < H), other=0.0)
            w_mask = (kk[:, None] < H) & col_mask[None, :]
            u_r = tl.load(w_hh_ptr + cols[None, :] * H + kk[:, None], mask=w_mask, other=0.0)
            u_z = tl.load(w_hh_ptr + (H + cols[None, :]) * H + kk[:, None], mask=w_mask, other=0.0)
            u_n = tl.load(w_hh_ptr + (2 * H + cols[None, :]) * H + kk[:, None], mask=w_mask, other=0.0)
            acc_r += tl.dot(h_k, u_r)
            acc_z += tl.dot(h_k, u_z)
            acc_hn += tl.dot(h_k, u_n)

        r = tl.sigmoid(acc_r + b_ir[None, :] + b_hr[None, :])
        z = tl.sigmoid(acc_z + b_iz[None, :] + b_hz[None, :])
        n_in = acc_in + b_in[None, :] + r * (acc_hn + b_hn[None, :])
        n = 2.0 * tl.sigmoid(2.0 * n_in) - 1.0

        h_prev = tl.load(h_base + rows[:, None] * H + cols[None, :], mask=tile_mask, other=0.0)
        h_new = (1.0 - z) * n + z * h_prev
        tl.store(out_ptr + t * B * H + rows[:, None] * H + cols[None, :], h_new, mask=tile_mask)
        tl.debug_barrier()


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
        x = x.contiguous()
        steps, B = x.size(0), x.size(1)
        H = self.hidden_size

        BLOCK_B = 16
        BLOCK_H = triton.next_power_of_2(H)
        BLOCK_K = 16
        grid = (triton.cdiv(B, BLOCK_B),)

        inp = x
        for layer in range(self.num_layers):
            w_ih = getattr(self.gru, f"weight_ih_l{layer}").contiguous()
            w_hh = getattr(self.gru, f"weight_hh_l{layer}").contiguous()
            if self.bias:
                b_ih = getattr(self.gru, f"bias_ih_l{layer}")
                b_hh = getattr(self.gru, f"bias_hh_l{layer}")
            else:
                b_ih = b_hh = torch.zeros(3 * H, device=x.device, dtype=torch.float32)
            out = torch.empty((steps, B, H), device=x.device, dtype=torch.float32)
            gru_fused_layer_kernel[grid](
                inp, h0[layer].contiguous(), out,
                w_ih, w_hh, b_ih, b_hh,
                steps, B, inp.size(2), H,
                BLOCK_B=BLOCK_B, BLOCK_H=BLOCK_H, BLOCK_K=BLOCK_K,
                num_warps=8,
            )
            inp = out

        output = inp
        if self.batch_first:
            output = output.transpose(0, 1)
        return output


def get_inputs():
    return [torch.randn(seq_len, batch_size, input_size), torch.randn(num_layers, batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
