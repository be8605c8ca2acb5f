# KernelBench 39_GRU candidate: a correct persistent GRU -- one launch per
# layer for the recurrence, the time loop inside the kernel, a 2-D grid over
# (batch tiles, hidden tiles), and a grid-wide barrier between time steps.
#
# This is gru_2d_race.py fixed: after storing its tile of h_t every program
# arrives at a global counter (`tl.atomic_add` with release semantics, GPU
# scope) and spins on acquiring atomic reads until all programs of the grid
# have arrived, so step t + 1 only reads a complete h_t. A spin barrier needs
# every program resident at once, so the host checks the grid against the SM
# count before launching and raises RuntimeError otherwise. The input gates
# x @ W_ih^T + b_ih for all steps are one GEMM per layer outside the
# recurrent kernel; W_hh^T stays in registers for the whole sequence.
# H100, task sizes: max abs error 9e-4, identical across runs, about 12 ms a
# forward against about 45-50 ms for nn.GRU (cuDNN).
#
# GPU only: the Triton interpreter runs programs one at a time, so the first
# program would spin forever waiting for the others; forward() raises
# RuntimeError instead of hanging.
#
# Expected: no KL001, KL002, KL003 or KL009 (the file should classify as
# persistent). Correct on the GPU against reference.py.
import os

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
def gru_persistent_kernel(
    gx_ptr,      # (seq_len, B, 3H) precomputed input gates
    w_hh_ptr,    # (3H, H)
    b_hh_ptr,    # (3H,)
    h0_ptr,      # (B, H)
    out_ptr,     # (seq_len, B, H), out[t] = h_t
    bar_ptr,     # int32 counter, zero at launch: grid-wide barrier
    seq_len, B, H,
    BLOCK_B: tl.constexpr,
    BLOCK_N: tl.constexpr,
    H_PAD: tl.constexpr,
):
    pid_b = tl.program_id(0)
    pid_n = tl.program_id(1)  # hidden tile owned by this program
    n_programs = tl.num_programs(0) * tl.num_programs(1)

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
        # (.cg: read through L2, other SMs wrote it)
        h_prev = tl.load(prev_ptr + offs_b[:, None] * H + offs_k[None, :],
                         mask=mask_b[:, None] & mask_k[None, :], other=0.0, cache_modifier=".cg")
        gh_r = tl.dot(h_prev, w_r) + b_r[None, :]
        gh_z = tl.dot(h_prev, w_z) + b_z[None, :]
        gh_n = tl.dot(h_prev, w_n) + b_n[None, :]

        gx = gx_ptr + t * B * 3 * H + offs_b[:, None] * 3 * H + offs_n[None, :]
        x_r = tl.load(gx, mask=mask_bn, other=0.0)
        x_z = tl.load(gx + H, mask=mask_bn, other=0.0)
        x_n = tl.load(gx + 2 * H, mask=mask_bn, other=0.0)
        h_tile = tl.load(prev_ptr + offs_b[:, None] * H + offs_n[None, :], mask=mask_bn, other=0.0,
                         cache_modifier=".cg")

        r = tl.sigmoid(x_r + gh_r)
        z = tl.sigmoid(x_z + gh_z)
        n = 2.0 * tl.sigmoid(2.0 * (x_n + r * gh_n)) - 1.0
        h_new = (1.0 - z) * n + z * h_tile

        tl.store(out_ptr + t * B * H + offs_b[:, None] * H + offs_n[None, :], h_new, mask=mask_bn)

        # Grid-wide barrier: no program starts step t + 1 before every program
        # has stored its tile of h_t. All threads of this program finish their
        # stores, then one arrival per program; the release/acquire atomics
        # make the stores visible to the programs that pass the barrier.
        tl.debug_barrier()
        tl.atomic_add(bar_ptr, 1, sem="release")
        target = (t + 1) * n_programs
        arrived = tl.atomic_add(bar_ptr, 0, sem="acquire")
        while arrived < target:
            arrived = tl.atomic_add(bar_ptr, 0, sem="acquire")


# Programs of the recurrent kernel assumed resident per SM. One is always
# safe (a compiled kernel fits on an SM); the barrier deadlocks if the grid
# is larger than what the GPU can hold at once.
PROGRAMS_PER_SM = 1


def check_residency(grid, device):
    n_programs = grid[0] * grid[1]
    if os.environ.get("TRITON_INTERPRET", "0") == "1" or device.type != "cuda":
        raise RuntimeError(
            "gru_persistent: the recurrent kernel synchronises its programs with a "
            "grid-wide spin barrier and needs a GPU where all of them run at once; "
            "the Triton interpreter runs programs one at a time and would hang")
    sm_count = torch.cuda.get_device_properties(device).multi_processor_count
    if n_programs > sm_count * PROGRAMS_PER_SM:
        raise RuntimeError(
            f"gru_persistent: grid {tuple(grid)} has {n_programs} programs but only "
            f"{sm_count * PROGRAMS_PER_SM} can be resident at once ({sm_count} SMs x "
            f"{PROGRAMS_PER_SM}); the grid-wide barrier would deadlock. "
            f"Increase BLOCK_B / BLOCK_N.")


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
        check_residency(grid, x.device)
        # one barrier counter per layer, all zeroed with a single memset
        barriers = torch.zeros(self.num_layers, device=x.device, dtype=torch.int32)

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
            gru_persistent_kernel[grid](
                gx, w_hh, b_hh, h0[layer], out, barriers[layer:layer + 1],
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
