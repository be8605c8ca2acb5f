# KernelBench 39_GRU candidate: a Python time loop that also waits for the
# GPU at every step.
#
# Demonstrates KL010: after each step's launch, forward() checks the new
# hidden state for NaN/Inf with `.item()`, which copies a flag to the host
# and so blocks until the kernel has finished -- the CPU can no longer queue
# launches ahead of the GPU, and every step pays the full launch latency plus
# a device-to-host round trip. A `torch.cuda.synchronize()` after each layer
# adds a second, per-layer host sync. The time loop itself launches one fused
# cell kernel per step, so KL001 fires too (expected: the per-step host sync
# only makes sense inside a Python time loop).
#
# Expected: KL010 host-sync-in-loop (the `.item()` in the `for t` loop and the
# `torch.cuda.synchronize()` in the layer loop) and KL001
# python-time-loop-launch. Must NOT fire: KL009 (the input projection is one
# F.linear per layer, outside the time loop). Correct: matches reference.py.
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

batch_size = 10
seq_len = 512
input_size = 128
hidden_size = 256
num_layers = 6


@triton.jit
def gru_step_kernel(
    xg_ptr,        # (B, 3H) input gates of this step (bias included)
    h_ptr,         # (B, H) previous hidden state
    w_hh_ptr,      # (3H, H)
    b_hh_ptr,      # (3H,)
    h_out_ptr,     # (B, H) new hidden state
    B, H,
    BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_b = tl.program_id(0)
    pid_n = tl.program_id(1)
    rb = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    mb = rb < B
    mn = rn < H

    gh_r = tl.zeros((BLOCK_B, BLOCK_N), dtype=tl.float32)
    gh_z = tl.zeros((BLOCK_B, BLOCK_N), dtype=tl.float32)
    gh_n = tl.zeros((BLOCK_B, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, H, BLOCK_K):
        kk = k0 + rk
        mk = kk < H
        h = tl.load(h_ptr + rb[:, None] * H + kk[None, :], mask=mb[:, None] & mk[None, :], other=0.0)
        wm = mk[:, None] & mn[None, :]
        w_r = tl.load(w_hh_ptr + rn[None, :] * H + kk[:, None], mask=wm, other=0.0)
        w_z = tl.load(w_hh_ptr + (rn[None, :] + H) * H + kk[:, None], mask=wm, other=0.0)
        w_n = tl.load(w_hh_ptr + (rn[None, :] + 2 * H) * H + kk[:, None], mask=wm, other=0.0)
        # small batch: broadcast-multiply-reduce instead of tl.dot
        gh_r += tl.sum(h[:, :, None] * w_r[None, :, :], axis=1)
        gh_z += tl.sum(h[:, :, None] * w_z[None, :, :], axis=1)
        gh_n += tl.sum(h[:, :, None] * w_n[None, :, :], axis=1)

    m = mb[:, None] & mn[None, :]
    xg = xg_ptr + rb[:, None] * (3 * H) + rn[None, :]
    r = tl.sigmoid(tl.load(xg, mask=m, other=0.0) + gh_r
                   + tl.load(b_hh_ptr + rn, mask=mn, other=0.0)[None, :])
    z = tl.sigmoid(tl.load(xg + H, mask=m, other=0.0) + gh_z
                   + tl.load(b_hh_ptr + H + rn, mask=mn, other=0.0)[None, :])
    hn = gh_n + tl.load(b_hh_ptr + 2 * H + rn, mask=mn, other=0.0)[None, :]
    c = tl.load(xg + 2 * H, mask=m, other=0.0) + r * hn
    n = 2.0 * tl.sigmoid(2.0 * c) - 1.0
    h_old = tl.load(h_ptr + rb[:, None] * H + rn[None, :], mask=m, other=0.0)
    tl.store(h_out_ptr + rb[:, None] * H + rn[None, :], (1.0 - z) * n + z * h_old, mask=m)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        super(ModelNew, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.gru = nn.GRU(input_size, hidden_size, num_layers, bias, batch_first, dropout=0, bidirectional=False)

    def forward(self, x, h0):
        if self.batch_first:
            x = x.transpose(0, 1)
        n_steps = x.size(0)
        B = x.size(1)
        H = self.hidden_size
        BLOCK_B, BLOCK_N, BLOCK_K = 4, 32, 32
        grid = (triton.cdiv(B, BLOCK_B), triton.cdiv(H, BLOCK_N))

        layer_in = x.contiguous()
        for layer in range(self.num_layers):
            w_ih = getattr(self.gru, f"weight_ih_l{layer}")
            w_hh = getattr(self.gru, f"weight_hh_l{layer}").contiguous()
            b_ih = getattr(self.gru, f"bias_ih_l{layer}") if self.bias else None
            if self.bias:
                b_hh = getattr(self.gru, f"bias_hh_l{layer}").contiguous()
            else:
                b_hh = torch.zeros(3 * H, device=x.device, dtype=torch.float32)

            x_gates = F.linear(layer_in, w_ih, b_ih).contiguous()  # (steps, B, 3H)
            out = torch.empty((n_steps, B, H), device=x.device, dtype=torch.float32)
            h = h0[layer].contiguous()
            for t in range(n_steps):
                gru_step_kernel[grid](
                    x_gates[t], h, w_hh, b_hh, out[t], B, H,
                    BLOCK_B=BLOCK_B, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                )
                h = out[t]
                # guard against the recurrence blowing up
                if not torch.isfinite(h).all().item():
                    raise RuntimeError(f"GRU hidden state is not finite at layer {layer}, step {t}")
            if x.is_cuda:
                torch.cuda.synchronize()
            layer_in = out

        output = layer_in
        if self.batch_first:
            output = output.transpose(0, 1)
        return output


def get_inputs():
    return [torch.randn(seq_len, batch_size, input_size), torch.randn(num_layers, batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
