# KernelBench 39_GRU candidate: the time loop is in Python.
#
# Demonstrates the most common slow GRU from the seeds: forward() loops over
# the layers and then `for t in range(seq_len):`, and every step launches two
# kernels through helpers (gemm_bias_out for h @ W_hh^T, gru_step for the
# gates). That is (1 + 2 * seq_len) * num_layers launches per forward:
# 6150 at the task sizes, against 6 for a persistent kernel.
#
# Expected: KL001 python-time-loop-launch (on the `for t` loop; both launches
# are reached through helper functions). Correct: matches reference.py.
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
def linear_bias_kernel(
    a_ptr, w_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak,
    stride_wn, stride_wk,
    stride_cm, stride_cn,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # C[M, N] = A[M, K] @ W[N, K]^T + b[N]
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & (kk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + offs_n[None, :] * stride_wn + kk[:, None] * stride_wk,
                    mask=(offs_n[None, :] < N) & (kk[:, None] < K), other=0.0)
        acc += tl.dot(a, w)

    if HAS_BIAS:
        bias = tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0)
        acc += bias[None, :]

    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def gru_cell_kernel(
    gi_ptr, gh_ptr, h_ptr, out_ptr,
    B, H,
    BLOCK: tl.constexpr,
):
    # gi, gh: (B, 3H) gate pre-activations in PyTorch's (r, z, n) order.
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < B * H
    row = offs // H
    col = offs % H
    g = row * 3 * H + col

    i_r = tl.load(gi_ptr + g, mask=mask, other=0.0)
    i_z = tl.load(gi_ptr + g + H, mask=mask, other=0.0)
    i_n = tl.load(gi_ptr + g + 2 * H, mask=mask, other=0.0)
    h_r = tl.load(gh_ptr + g, mask=mask, other=0.0)
    h_z = tl.load(gh_ptr + g + H, mask=mask, other=0.0)
    h_n = tl.load(gh_ptr + g + 2 * H, mask=mask, other=0.0)
    h_prev = tl.load(h_ptr + offs, mask=mask, other=0.0)

    r = tl.sigmoid(i_r + h_r)
    z = tl.sigmoid(i_z + h_z)
    n_pre = i_n + r * h_n
    n = 2.0 * tl.sigmoid(2.0 * n_pre) - 1.0  # tanh
    h_new = (1.0 - z) * n + z * h_prev

    tl.store(out_ptr + offs, h_new, mask=mask)


def gemm_bias_out(a, weight, bias):
    """a @ weight.T + bias with a Triton kernel. a: (M, K), weight: (N, K)."""
    M, K = a.shape
    N = weight.shape[0]
    c = torch.empty((M, N), device=a.device, dtype=torch.float32)
    BLOCK_M, BLOCK_N, BLOCK_K = 16, 64, 32
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    linear_bias_kernel[grid](
        a, weight, bias if bias is not None else weight, c,
        M, N, K,
        a.stride(0), a.stride(1),
        weight.stride(0), weight.stride(1),
        c.stride(0), c.stride(1),
        HAS_BIAS=bias is not None,
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        num_warps=4,
    )
    return c


def gru_step(gi_t, gh_t, h_prev, out_t):
    """One GRU time step: out_t = GRUCell(gates) given both projections."""
    B, H = h_prev.shape
    BLOCK = 256
    grid = (triton.cdiv(B * H, BLOCK),)
    gru_cell_kernel[grid](gi_t, gh_t, h_prev, out_t, B, H, BLOCK=BLOCK, num_warps=4)
    return out_t


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        super(ModelNew, self).__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        # Same parameters (and the same random init) as the reference nn.GRU.
        self.gru = nn.GRU(input_size, hidden_size, num_layers, bias, batch_first, dropout=0, bidirectional=False)

    def forward(self, x, h0):
        if self.batch_first:
            x = x.transpose(0, 1)
        x = x.contiguous().float()
        seq_len, batch, _ = x.shape
        H = self.hidden_size

        layer_input = x
        for layer in range(self.num_layers):
            w_ih = getattr(self.gru, f"weight_ih_l{layer}").contiguous()
            w_hh = getattr(self.gru, f"weight_hh_l{layer}").contiguous()
            b_ih = getattr(self.gru, f"bias_ih_l{layer}") if self.bias else None
            b_hh = getattr(self.gru, f"bias_hh_l{layer}") if self.bias else None

            # Input projection for every time step at once: (seq*B, in) @ W_ih^T
            gi = gemm_bias_out(layer_input.reshape(seq_len * batch, -1), w_ih, b_ih)
            gi = gi.view(seq_len, batch, 3 * H)

            out = torch.empty((seq_len, batch, H), device=x.device, dtype=torch.float32)
            h = h0[layer].contiguous().float()
            for t in range(seq_len):
                gh = gemm_bias_out(h, w_hh, b_hh)
                h = gru_step(gi[t], gh, h, out[t])
            layer_input = out

        output = layer_input
        if self.batch_first:
            output = output.transpose(0, 1)
        return output


def get_inputs():
    return [torch.randn(seq_len, batch_size, input_size), torch.randn(num_layers, batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
