# KernelBench 39_GRU candidate: the "fix" the seeds recommended for the
# serialized tile loop -- and a race.
#
# Demonstrates a cross-program recurrence: the grid is 2-D,
# `(cdiv(B, BLOCK_B), cdiv(H, BLOCK_N))`, `pid_n = tl.program_id(1)` picks a
# hidden tile, and the time loop runs inside the kernel. Each program stores
# only its own tile of h_t, but step t + 1 needs the *whole* h_t (the K side
# of h @ W_hh^T), which the other programs write. Nothing orders step t of one
# program before step t + 1 of another: `tl.debug_barrier()` only
# synchronises the threads of one program, not the grid. On the GPU the
# programs run concurrently and read half-written state: wrong, and different
# from run to run (H100, task sizes: max abs error 0.36 against the reference,
# and two identical runs differed by 0.37).
#
# Under the Triton CPU interpreter the programs run one after another, each
# through all its steps. With a single hidden tile (hidden_size <= BLOCK_N =
# 32, e.g. the small CI sizes) it therefore matches the reference; with more
# tiles the first program reads tiles nobody has written yet and it does not.
# gru_persistent.py is the same kernel with a grid-wide barrier.
#
# Expected: KL003 cross-program-recurrence. Must NOT fire: KL001 (one launch
# per layer), KL002 (the grid covers H), KL009 (input gates precomputed).
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
def input_gates_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # out[M, N] = x[M, K] @ w[N, K]^T + b[N]   (all time steps of one layer)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(x_ptr + offs_m[:, None] * K + (k + offs_k)[None, :],
                    mask=(offs_m[:, None] < M) & ((k + offs_k)[None, :] < K), other=0.0)
        b = tl.load(w_ptr + offs_n[None, :] * K + (k + offs_k)[:, None],
                    mask=(offs_n[None, :] < N) & ((k + offs_k)[:, None] < K), other=0.0)
        acc += tl.dot(a, b)
    acc += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0)[None, :]
    tl.store(out_ptr + offs_m[:, None] * N + offs_n[None, :], acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def gru_recurrent_kernel(
    gx_ptr,      # (seq_len, B, 3H) precomputed input gates
    w_hh_ptr,    # (3H, H)
    b_hh_ptr,    # (3H,)
    h0_ptr,      # (B, H)
    out_ptr,     # (seq_len, B, H), out[t] = h_t
    seq_len, B, H,
    BLOCK_B: tl.constexpr,
    BLOCK_N: tl.constexpr,
    H_PAD: tl.constexpr,
):
    pid_b = tl.program_id(0)
    pid_n = tl.program_id(1)  # hidden tile owned by this program

    offs_b = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, H_PAD)
    mask_b = offs_b < B
    mask_n = offs_n < H
    mask_k = offs_k < H
    mask_bn = mask_b[:, None] & mask_n[None, :]

    # W_hh^T slices for this hidden tile stay in registers for all steps.
    w_mask = mask_k[:, None] & mask_n[None, :]
    w_r = tl.load(w_hh_ptr + offs_n[None, :] * H + offs_k[:, None], mask=w_mask, other=0.0)
    w_z = tl.load(w_hh_ptr + (offs_n[None, :] + H) * H + offs_k[:, None], mask=w_mask, other=0.0)
    w_n = tl.load(w_hh_ptr + (offs_n[None, :] + 2 * H) * H + offs_k[:, None], mask=w_mask, other=0.0)
    b_r = tl.load(b_hh_ptr + offs_n, mask=mask_n, other=0.0)
    b_z = tl.load(b_hh_ptr + H + offs_n, mask=mask_n, other=0.0)
    b_n = tl.load(b_hh_ptr + 2 * H + offs_n, mask=mask_n, other=0.0)

    for t in range(seq_len):
        prev_ptr = out_ptr + (t - 1) * B * H
        if t == 0:
            prev_ptr = h0_ptr

        # whole previous hidden state (all hidden tiles) for the recurrent GEMM
        h_prev = tl.load(prev_ptr + offs_b[:, None] * H + offs_k[None, :],
                         mask=mask_b[:, None] & mask_k[None, :], other=0.0)
        gh_r = tl.dot(h_prev, w_r) + b_r[None, :]
        gh_z = tl.dot(h_prev, w_z) + b_z[None, :]
        gh_n = tl.dot(h_prev, w_n) + b_n[None, :]

        gx = gx_ptr + t * B * 3 * H + offs_b[:, None] * 3 * H + offs_n[None, :]
        x_r = tl.load(gx, mask=mask_bn, other=0.0)
        x_z = tl.load(gx + H, mask=mask_bn, other=0.0)
        x_n = tl.load(gx + 2 * H, mask=mask_bn, other=0.0)
        h_tile = tl.load(prev_ptr + offs_b[:, None] * H + offs_n[None, :], mask=mask_bn, other=0.0)

        r = tl.sigmoid(x_r + gh_r)
        z = tl.sigmoid(x_z + gh_z)
        n = 2.0 * tl.sigmoid(2.0 * (x_n + r * gh_n)) - 1.0
        h_new = (1.0 - z) * n + z * h_tile

        tl.store(out_ptr + t * B * H + offs_b[:, None] * H + offs_n[None, :], h_new, mask=mask_bn)
        tl.debug_barrier()  # sync before the next step reads h


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
        seq_len, B, _ = x.size()
        H = self.hidden_size
        h0 = h0.contiguous()

        BLOCK_B = 16
        BLOCK_N = 32
        grid = (triton.cdiv(B, BLOCK_B), triton.cdiv(H, BLOCK_N))

        layer_in = x
        for layer in range(self.num_layers):
            w_ih = getattr(self.gru, f"weight_ih_l{layer}").contiguous()
            w_hh = getattr(self.gru, f"weight_hh_l{layer}").contiguous()
            if self.bias:
                b_ih = getattr(self.gru, f"bias_ih_l{layer}").contiguous()
                b_hh = getattr(self.gru, f"bias_hh_l{layer}").contiguous()
            else:
                b_ih = torch.zeros(3 * H, device=x.device)
                b_hh = torch.zeros(3 * H, device=x.device)

            M, K = seq_len * B, layer_in.size(-1)
            gx = torch.empty((seq_len, B, 3 * H), device=x.device, dtype=torch.float32)
            input_gates_kernel[(triton.cdiv(M, 64), triton.cdiv(3 * H, 64))](
                layer_in, w_ih, b_ih, gx, M, 3 * H, K,
                BLOCK_M=64, BLOCK_N=64, BLOCK_K=32,
            )

            out = torch.empty((seq_len, B, H), device=x.device, dtype=torch.float32)
            gru_recurrent_kernel[grid](
                gx, w_hh, b_hh, h0[layer], out,
                seq_len, B, H,
                BLOCK_B=BLOCK_B, BLOCK_N=BLOCK_N, H_PAD=triton.next_power_of_2(H),
                num_warps=8,
            )
            layer_in = out

        output = layer_in
        if self.batch_first:
            output = output.transpose(0, 1)
        return output


def get_inputs():
    return [torch.randn(seq_len, batch_size, input_size), torch.randn(num_layers, batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
