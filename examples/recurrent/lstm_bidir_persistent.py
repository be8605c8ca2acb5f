# kernel-lsp: reference = reference_lstm_bidir.py
# KernelBench level 3, 38_LSTMBidirectional (6-layer bidirectional LSTM,
# batch_first, then a Linear on the last step's output) with one persistent
# launch per layer that runs BOTH directions side by side: the first half of
# the grid walks t = 0 .. T-1, the second half t = T-1 .. 0, at the same
# time. ModelNew has the task file's interface (constructor arguments,
# forward(x, h0, c0), output) and builds the same nn.LSTM and nn.Linear in
# the same order, so under the evaluator's seed it holds the reference's
# weights.
#
# - Input gates of both directions for all steps: one fp32 GEMM per layer
#   outside the kernel ((T * B, in) @ [W_ih; W_ih_reverse]^T + biases).
# - Grid: 2 x (hidden / BLOCK_N) programs; a program owns BLOCK_N hidden units
#   of one direction, keeps its slice of W_hh (4 gates) on chip for the whole
#   sequence and its slice of the cell state c in registers.
# - The directions never read each other's state inside a layer, so each has
#   its own grid-wide barrier (an atomic counter, release / acquire) between
#   steps; the host checks that every program can be resident at once.
# - A layer needs both directions of the layer below at every step, so layers
#   cannot overlap as a wavefront here: one launch per layer.
# - Arithmetic of the reference, not exact fp32: PyTorch lets cuDNN use TF32
#   (torch.backends.cudnn.allow_tf32 is True by default), so nn.GRU / nn.LSTM
#   on an H100 round both GEMM operands to nearest TF32 and land ~2e-4 from
#   exact fp32, twice KernelBench's fp32 tolerance (1e-4). Exact arithmetic
#   (IEEE or 3xTF32 dots) fails the scorer; rounding like cuDNN passes it:
#   the input GEMM takes TF32-rounded operands (tf32_rounded), the recurrent
#   tl.dots fp16 operands (round to nearest, the same 10-bit mantissa as
#   TF32) with fp32 accumulation, state and gate math in fp32. OPERANDS =
#   "tf32" rounds them to TF32 instead (as close, slower).
#
# Under the Triton interpreter it runs only when each direction is one program
# (hidden_size <= BLOCK_N): the interpreter runs programs one at a time.
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl

# Hidden units per program, warps per program (tuned on an H100); tl.dot
# operands ("fp16" or "tf32", both rounded to nearest); whether the input
# GEMM rounds its operands to TF32 as cuDNN does.
BLOCK_N = 8
NUM_WARPS = 4
OPERANDS = "fp16"
ROUND_INPUT_GEMM = True


@triton.jit
def grid_barrier(bar_ptr, target):
    # Every program arrives once; nobody leaves before `target` arrivals.
    tl.debug_barrier()
    tl.atomic_add(bar_ptr, 1, sem="release")
    arrived = tl.atomic_add(bar_ptr, 0, sem="acquire")
    while arrived < target:
        arrived = tl.atomic_add(bar_ptr, 0, sem="acquire")


@triton.jit
def round_tf32(x):
    # fp32 -> the nearest TF32 value (10-bit mantissa, ties away from zero),
    # kept in fp32: a TF32 MMA then reads it without further rounding.
    bits = x.to(tl.uint32, bitcast=True)
    return ((bits + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)


@triton.jit
def as_operand(x, OPERANDS: tl.constexpr):
    # An fp32 tile as a tl.dot operand: rounded to nearest TF32, or to fp16.
    if OPERANDS == "fp16":
        return x.to(tl.float16)
    else:
        return round_tf32(x)


@triton.jit
def lstm_bidir_layer_kernel(
    gx_ptr,      # (T, B, 8H): input gates, forward direction in [:4H], reverse in [4H:]
    w_hh_ptr,    # (2, 4H, H)
    b_hh_ptr,    # (2, 4H)
    h0_ptr,      # (2, B, H): this layer's initial states
    c0_ptr,      # (2, B, H)
    out_ptr,     # (T, B, 2H): forward h_t in [:H], reverse in [H:]
    bar_ptr,     # (2,) int32 counters, zero at launch: one barrier per direction
    T, B, H,
    BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, H_PAD: tl.constexpr, OPERANDS: tl.constexpr,
):
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(H, BLOCK_N)
    d = pid // n_tiles  # 0 forward, 1 reverse
    offs_n = (pid % n_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_b = tl.arange(0, BLOCK_B)
    offs_k = tl.arange(0, H_PAD)
    mask_b = offs_b < B
    mask_n = offs_n < H
    mask_k = offs_k < H
    mask_bn = mask_b[:, None] & mask_n[None, :]
    mask_bk = mask_b[:, None] & mask_k[None, :]

    # Weight slices (gates i, f, g, o) on chip for the whole sequence.
    w_hh = w_hh_ptr + d * 4 * H * H
    b_hh = b_hh_ptr + d * 4 * H
    # All four gates in one (H_PAD, 4 * BLOCK_N) tile, gate-interleaved: column
    # 4 * n + g is gate g (i, f, g, o) of unit n, so one tl.dot a step makes every
    # gate and a reshape with two splits takes them apart.
    offs_j = tl.arange(0, 4 * BLOCK_N)
    unit_j = (pid % n_tiles) * BLOCK_N + offs_j // 4
    rows_j = (offs_j % 4) * H + unit_j
    mask_j = unit_j < H
    w_all = tl.load(w_hh + rows_j[None, :] * H + offs_k[:, None], mask=mask_k[:, None] & mask_j[None, :], other=0.0)
    w_all = as_operand(w_all, OPERANDS)
    b_all = tl.load(b_hh + rows_j, mask=mask_j, other=0.0)
    c = tl.load(c0_ptr + d * B * H + offs_b[:, None] * H + offs_n[None, :], mask=mask_bn, other=0.0)

    # The input gates of a step do not depend on the recurrence: each step's
    # are loaded one step ahead, before the barrier, so their latency (they
    # come from HBM) overlaps the wait.
    gx = gx_ptr + offs_b[:, None] * 8 * H + d * 4 * H + offs_n[None, :]
    t0 = d * (T - 1)
    x_i = tl.load(gx + t0 * B * 8 * H, mask=mask_bn, other=0.0)
    x_f = tl.load(gx + t0 * B * 8 * H + H, mask=mask_bn, other=0.0)
    x_g = tl.load(gx + t0 * B * 8 * H + 2 * H, mask=mask_bn, other=0.0)
    x_o = tl.load(gx + t0 * B * 8 * H + 3 * H, mask=mask_bn, other=0.0)
    for s in range(T):
        t = s + d * (T - 1 - 2 * s)        # forward: s; reverse: T - 1 - s
        prev = out_ptr + (t - 1 + 2 * d) * B * 2 * H + d * H
        stride = 2 * H
        if s == 0:
            prev = h0_ptr + d * B * H
            stride = H
        h_all = as_operand(tl.load(prev + offs_b[:, None] * stride + offs_k[None, :], mask=mask_bk, other=0.0,
                        cache_modifier=".cg"), OPERANDS)
        acc = tl.dot(h_all, w_all, input_precision="tf32") + b_all[None, :]
        even, odd = tl.split(tl.reshape(acc, (BLOCK_B, BLOCK_N, 2, 2)))
        a_i, a_g = tl.split(even)
        a_f, a_o = tl.split(odd)
        a_i = a_i + x_i
        a_f = a_f + x_f
        a_g = a_g + x_g
        a_o = a_o + x_o
        g = 2.0 * tl.sigmoid(2.0 * a_g) - 1.0  # tanh
        c = tl.sigmoid(a_f) * c + tl.sigmoid(a_i) * g
        h_new = tl.sigmoid(a_o) * (2.0 * tl.sigmoid(2.0 * c) - 1.0)
        tl.store(out_ptr + t * B * 2 * H + offs_b[:, None] * 2 * H + d * H + offs_n[None, :], h_new, mask=mask_bn)
        t_next = tl.minimum(tl.maximum(t + 1 - 2 * d, 0), T - 1)  # past the end: reload a valid step
        x_i = tl.load(gx + t_next * B * 8 * H, mask=mask_bn, other=0.0)
        x_f = tl.load(gx + t_next * B * 8 * H + H, mask=mask_bn, other=0.0)
        x_g = tl.load(gx + t_next * B * 8 * H + 2 * H, mask=mask_bn, other=0.0)
        x_o = tl.load(gx + t_next * B * 8 * H + 3 * H, mask=mask_bn, other=0.0)
        grid_barrier(bar_ptr + d, (s + 1) * n_tiles)


def tf32_rounded(t):
    """t rounded to nearest TF32 like round_tf32 in the kernel (when ROUND_INPUT_GEMM), still fp32."""
    if not ROUND_INPUT_GEMM:
        return t
    return ((t.contiguous().view(torch.int32) + 0x1000) & -0x2000).view(torch.float32)


def check_residency(n_programs, device):
    """The grid-wide barriers need every program of a launch resident at once."""
    if os.environ.get("TRITON_INTERPRET", "0") == "1" or device.type != "cuda":
        if n_programs > 2:
            raise RuntimeError(
                f"lstm_bidir_persistent: {n_programs // 2} programs per direction wait on each other at a "
                "grid-wide barrier; the Triton interpreter runs programs one at a time and would hang. "
                "Run it on a GPU (or with hidden_size <= BLOCK_N).")
        return
    sm_count = torch.cuda.get_device_properties(device).multi_processor_count
    if n_programs > sm_count:
        raise RuntimeError(
            f"lstm_bidir_persistent: {n_programs} programs but only {sm_count} SMs; the grid-wide barrier "
            f"would deadlock. Raise BLOCK_N (now {BLOCK_N}).")


def lstm_bidir(lstm, x, h0, c0):
    """Runs the stacked bidirectional nn.LSTM `lstm` on x (T, B, I); returns the last layer's output (T, B, 2H)."""
    T, B, _ = x.shape
    H, L = lstm.hidden_size, lstm.num_layers
    dev = x.device
    block_n = min(BLOCK_N, triton.next_power_of_2(H))
    n_programs = 2 * triton.cdiv(H, block_n)
    check_residency(n_programs, dev)

    def param(name, shape):
        p = getattr(lstm, name, None)
        return p.contiguous() if p is not None else torch.zeros(shape, device=dev, dtype=x.dtype)

    h0, c0 = h0.contiguous(), c0.contiguous()
    barriers = torch.zeros((L, 2), device=dev, dtype=torch.int32)
    layer_in = x
    for l in range(L):
        sfx = [f"_l{l}", f"_l{l}_reverse"]
        w_ih = torch.cat([param("weight_ih" + s, None) for s in sfx])
        b_ih = torch.cat([param("bias_ih" + s, (4 * H,)) for s in sfx])
        w_hh = torch.stack([param("weight_hh" + s, None) for s in sfx])
        b_hh = torch.stack([param("bias_hh" + s, (4 * H,)) for s in sfx])
        # input gates of both directions, all steps: one GEMM
        gx = torch.addmm(b_ih, tf32_rounded(layer_in.reshape(T * B, -1)), tf32_rounded(w_ih).t())
        out = torch.empty((T, B, 2 * H), device=dev, dtype=torch.float32)
        lstm_bidir_layer_kernel[(n_programs,)](
            gx, w_hh, b_hh, h0[2 * l:2 * l + 2], c0[2 * l:2 * l + 2], out, barriers[l],
            T, B, H,
            BLOCK_B=max(16, triton.next_power_of_2(B)), BLOCK_N=block_n, H_PAD=max(16, triton.next_power_of_2(H)),
            OPERANDS=OPERANDS, num_warps=NUM_WARPS,
        )
        layer_in = out
    return layer_in


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, output_size, dropout=0.0):
        super(ModelNew, self).__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, dropout=dropout,
                            bidirectional=True)
        self.fc = nn.Linear(hidden_size * 2, output_size)

    def forward(self, x, h0, c0):
        out = lstm_bidir(self.lstm, x.transpose(0, 1).contiguous(), h0, c0)  # (T, B, 2H)
        # out[:, -1, :] of the batch_first output is the last time step
        return torch.addmm(self.fc.bias, out[-1], self.fc.weight.t())
