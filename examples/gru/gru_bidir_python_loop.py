# KernelBench 41_GRUBidirectional candidate: both time loops are in Python.
#
# Demonstrates the Python time loop in its two shapes: the forward direction
# walks `for t in range(seq_len):` and the reverse direction walks
# `for t in range(seq_len - 1, -1, -1):`. Each step launches the fused cell
# kernel (h @ W_hh^T plus the gates) directly from the loop body, so a
# forward costs num_layers * 2 * (1 + seq_len) launches (6156 at the task
# sizes).
#
# Expected: KL001 python-time-loop-launch, on both `for t` loops (the reverse
# range included). Correct: matches reference_bidir.py.
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
def input_proj_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr,
    M, N, K,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # y[M, N] = x[M, K] @ w[N, K]^T (+ b), all contiguous
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        x = tl.load(x_ptr + rm[:, None] * K + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + (k + rk)[:, None],
                    mask=(rn[None, :] < N) & ((k + rk)[:, None] < K), other=0.0)
        acc += tl.dot(x, w)
    if HAS_BIAS:
        acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def gru_cell_kernel(
    gi_ptr, h_ptr, w_hh_ptr, b_hh_ptr, out_ptr,
    B, H,
    stride_hb, stride_ob,
    HAS_BIAS: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # One step for one direction: gh = h @ W_hh^T (+ b_hh), then the gates.
    # gi: (B, 3H) precomputed input gates; h: (B, H) with row stride stride_hb;
    # out: (B, H) with row stride stride_ob (a half of the (B, 2H) output row).
    pid_b = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_b = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_b = offs_b < B
    mask_n = offs_n < H

    acc_r = tl.zeros((BLOCK_B, BLOCK_N), dtype=tl.float32)
    acc_z = tl.zeros((BLOCK_B, BLOCK_N), dtype=tl.float32)
    acc_n = tl.zeros((BLOCK_B, BLOCK_N), dtype=tl.float32)
    for k in range(0, H, BLOCK_K):
        kk = k + offs_k
        h = tl.load(h_ptr + offs_b[:, None] * stride_hb + kk[None, :],
                    mask=mask_b[:, None] & (kk[None, :] < H), other=0.0)
        w_mask = (kk[:, None] < H) & mask_n[None, :]
        w_r = tl.load(w_hh_ptr + offs_n[None, :] * H + kk[:, None], mask=w_mask, other=0.0)
        w_z = tl.load(w_hh_ptr + (offs_n[None, :] + H) * H + kk[:, None], mask=w_mask, other=0.0)
        w_n = tl.load(w_hh_ptr + (offs_n[None, :] + 2 * H) * H + kk[:, None], mask=w_mask, other=0.0)
        acc_r += tl.dot(h, w_r)
        acc_z += tl.dot(h, w_z)
        acc_n += tl.dot(h, w_n)

    if HAS_BIAS:
        acc_r += tl.load(b_hh_ptr + offs_n, mask=mask_n, other=0.0)[None, :]
        acc_z += tl.load(b_hh_ptr + H + offs_n, mask=mask_n, other=0.0)[None, :]
        acc_n += tl.load(b_hh_ptr + 2 * H + offs_n, mask=mask_n, other=0.0)[None, :]

    mask = mask_b[:, None] & mask_n[None, :]
    gi_row = gi_ptr + offs_b[:, None] * (3 * H) + offs_n[None, :]
    i_r = tl.load(gi_row, mask=mask, other=0.0)
    i_z = tl.load(gi_row + H, mask=mask, other=0.0)
    i_n = tl.load(gi_row + 2 * H, mask=mask, other=0.0)
    h_prev = tl.load(h_ptr + offs_b[:, None] * stride_hb + offs_n[None, :], mask=mask, other=0.0)

    r = tl.sigmoid(i_r + acc_r)
    z = tl.sigmoid(i_z + acc_z)
    n = 2.0 * tl.sigmoid(2.0 * (i_n + r * acc_n)) - 1.0
    h_new = (1.0 - z) * n + z * h_prev
    tl.store(out_ptr + offs_b[:, None] * stride_ob + offs_n[None, :], h_new, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        super(ModelNew, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.gru = nn.GRU(input_size, hidden_size, num_layers, bias, batch_first, dropout=0, bidirectional=True)

    def _input_gates(self, inp, weight, bias):
        M, K = inp.shape
        N = weight.shape[0]
        gates = torch.empty((M, N), device=inp.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 64))
        input_proj_kernel[grid](
            inp, weight, bias if bias is not None else weight, gates, M, N, K,
            HAS_BIAS=bias is not None, BLOCK_M=32, BLOCK_N=64, BLOCK_K=32,
        )
        return gates

    def forward(self, x, h0):
        if self.batch_first:
            x = x.transpose(0, 1)
        x = x.contiguous()
        seq_len, batch, _ = x.shape
        H = self.hidden_size
        BLOCK_B, BLOCK_N, BLOCK_K = 16, 64, 32
        grid = (triton.cdiv(batch, BLOCK_B), triton.cdiv(H, BLOCK_N))

        layer_in = x
        for layer in range(self.num_layers):
            out = torch.empty((seq_len, batch, 2 * H), device=x.device, dtype=torch.float32)
            flat_in = layer_in.reshape(seq_len * batch, -1)
            for direction, suffix in enumerate(("", "_reverse")):
                w_ih = getattr(self.gru, f"weight_ih_l{layer}{suffix}").contiguous()
                w_hh = getattr(self.gru, f"weight_hh_l{layer}{suffix}").contiguous()
                b_ih = getattr(self.gru, f"bias_ih_l{layer}{suffix}") if self.bias else None
                b_hh = getattr(self.gru, f"bias_hh_l{layer}{suffix}") if self.bias else None
                gi = self._input_gates(flat_in, w_ih, b_ih).view(seq_len, batch, 3 * H)
                h_init = h0[2 * layer + direction].contiguous()
                out_half = out[:, :, direction * H:(direction + 1) * H]

                if direction == 0:
                    h = h_init
                    for t in range(seq_len):
                        gru_cell_kernel[grid](
                            gi[t], h, w_hh, b_hh if b_hh is not None else w_hh, out_half[t],
                            batch, H, h.stride(0), out_half.stride(1),
                            HAS_BIAS=b_hh is not None,
                            BLOCK_B=BLOCK_B, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                        )
                        h = out_half[t]
                else:
                    h = h_init
                    for t in range(seq_len - 1, -1, -1):
                        gru_cell_kernel[grid](
                            gi[t], h, w_hh, b_hh if b_hh is not None else w_hh, out_half[t],
                            batch, H, h.stride(0), out_half.stride(1),
                            HAS_BIAS=b_hh is not None,
                            BLOCK_B=BLOCK_B, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                        )
                        h = out_half[t]
            layer_in = out

        output = layer_in
        if self.batch_first:
            output = output.transpose(0, 1)
        return output


def get_inputs():
    return [torch.randn(seq_len, batch_size, input_size), torch.randn(num_layers * 2, batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
