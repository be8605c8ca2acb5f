#!/usr/bin/env python3
"""Writes ModelNew candidates for KernelBench level-1 tasks, in KernelBench's
generations layout (`level_1_problem_P_sample_S_kernel.py`), for the batch
proof of issue #38 (`kernel-lsp bench --batch` on one and two GPUs, on Ray,
and KernelBench's own evaluator on the same files).

The candidates are written by hand-made templates, not by an LLM, so that a
batch is quick to generate. Per task there are correct Triton kernels (two
block shapes for the
matmuls, five for the others), a cheat (PyTorch does the work) and a failing one (a wrong
result, a Triton compile error or a Python syntax error). The task files
themselves are KernelBench's (`--tasks KernelBench/level1`); only the
candidates are written here. `manifest.json` records what each candidate was
written to be (`intent`): a label for reading the results, never a verdict.

Usage: gen_level1_candidates.py --tasks KB/KernelBench/level1 --out RUN_DIR
"""

import argparse
import json
import os
import re
import sys

HEADER = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"

# ---------------------------------------------------------------- elementwise / reductions

GELU = HEADER + '''

@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, C0: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    inner = 0.7978845608028654 * (x + C0 * x * x * x)
    t = 1.0 - 2.0 / (tl.exp(2.0 * inner) + 1.0)
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + t), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        gelu_kernel[(triton.cdiv(n, {BLOCK}),)](x, y, n, C0={C0}, BLOCK={BLOCK})
        return y
'''

DIAG = HEADER + '''

@triton.jit
def diag_mul_kernel(a_ptr, b_ptr, c_ptr, n, M, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    row = {ROW}
    a = tl.load(a_ptr + row, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, a * b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        B = B.contiguous()
        C = torch.empty_like(B)
        n = B.numel()
        diag_mul_kernel[(triton.cdiv(n, {BLOCK}),)](A, B, C, n, B.shape[1], BLOCK={BLOCK})
        return C
'''

LAYER_NORM = HEADER + '''

@triton.jit
def ln_stats_kernel(x_ptr, stats_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
    tl.atomic_add(stats_ptr + row * 2, tl.sum(x, axis=0))
    tl.atomic_add(stats_ptr + row * 2 + 1, tl.sum(x * x, axis=0))


@triton.jit
def ln_norm_kernel(x_ptr, w_ptr, b_ptr, stats_ptr, y_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    mean = tl.load(stats_ptr + row * 2) / n
    var = tl.load(stats_ptr + row * 2 + 1) / n - mean * mean
    rstd = {RSTD}
    x = tl.load(x_ptr + row * n + offs, mask=mask)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(y_ptr + row * n + offs, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x):
        x = x.contiguous()
        n = self.ln.weight.numel()
        rows = x.numel() // n
        stats = torch.zeros((rows, 2), device=x.device, dtype=torch.float32)
        y = torch.empty_like(x)
        grid = (rows, triton.cdiv(n, {BLOCK}))
        ln_stats_kernel[grid](x, stats, n, BLOCK={BLOCK})
        ln_norm_kernel[grid](x, self.ln.weight, self.ln.bias, stats, y, n, self.ln.eps, BLOCK={BLOCK})
        return y
'''

# ---------------------------------------------------------------- matmuls

MATMUL_KERNEL = '''

@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, TRI: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range({K_START}, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b{PRECISION})
    if TRI == 1:
        acc = tl.where(rn[None, :] >= rm[:, None], acc, 0.0)
    if TRI == 2:
        acc = tl.where(rn[None, :] <= rm[:, None], acc, 0.0)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b, tri=0):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float32)
    grid = (triton.cdiv(M, {BM}), triton.cdiv(N, {BN}))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BM={BM}, BN={BN}, BK={BK}, TRI=tri, num_warps={WARPS})
    return c
'''

# forward bodies per task: (operands expression, triangular flag, torch expression)
MATMUL_TASKS = {
    1: ("A, B", 0, "torch.matmul(A, B)"),
    2: ("A, B", 0, "torch.matmul(A, B)"),
    8: ("A, B", 0, "torch.matmul(A, B)"),
    10: ("A.reshape(-1, A.shape[-1]), B", 0, "torch.matmul(A, B)"),
    13: ("A, B", 0, "torch.matmul(A, B)"),
    14: ("A, B", 1, "torch.triu(torch.matmul(A, B))"),
    15: ("A, B", 2, "torch.tril(torch.matmul(A, B))"),
    16: ("A.T, B", 0, "torch.matmul(A.T, B)"),
    17: ("A, B.T", 0, "torch.matmul(A, B.T)"),
    18: ("A.T, B.T", 0, "torch.matmul(A.T, B.T)"),
}


def matmul_forward(task, op):
    operands, tri, _ = MATMUL_TASKS[task]
    body = f"        c = {op}({operands}, {tri})\n"
    if task == 10:
        body += "        return c.reshape(A.shape[0], A.shape[1], B.shape[1])\n"
    else:
        body += "        return c\n"
    return body


def matmul_candidate(task, bm, bn, bk, warps, precision=', input_precision="ieee"', k_start="0"):
    kernel = (MATMUL_KERNEL.replace("{BM}", str(bm)).replace("{BN}", str(bn)).replace("{BK}", str(bk))
              .replace("{WARPS}", str(warps)).replace("{PRECISION}", precision).replace("{K_START}", k_start))
    return (HEADER + kernel + "\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
            "    def forward(self, A, B):\n" + matmul_forward(task, "matmul"))


COPY_KERNEL = '''

@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)
'''


def cheat_copy(expr, args, init=""):
    """PyTorch computes the answer; a Triton kernel only copies it out."""
    return (HEADER + COPY_KERNEL + "\n\nclass ModelNew(nn.Module):\n" + (init or
            "    def __init__(self):\n        super().__init__()\n") +
            f"\n    def forward(self, {args}):\n"
            f"        r = ({expr}).contiguous()\n"
            "        out = torch.empty_like(r)\n"
            "        copy_kernel[(triton.cdiv(r.numel(), 1024),)](r, out, r.numel(), BLOCK=1024)\n"
            "        return out\n")


def cheat_never_launched(expr, args, init=""):
    """A Triton kernel is defined but never launched; PyTorch does the work."""
    return (HEADER + COPY_KERNEL + "\n\nclass ModelNew(nn.Module):\n" + (init or
            "    def __init__(self):\n        super().__init__()\n") +
            f"\n    def forward(self, {args}):\n        return {expr}\n")


def syntax_error(source):
    """Drops the colon of the first `def forward(...)`: CPython refuses the file."""
    return re.sub(r"(def forward\([^)]*\)):", r"\1", source, count=1)


def compile_error(source):
    """A call of a function `triton.language` does not have, inside the first kernel:
    Triton's compiler refuses it at the first launch."""
    return re.sub(r"(    (?:offs|row|pid_m) = )", "    nothing = tl.no_such_function(0)\n\\1", source, count=1)


def candidates():
    """(problem, [(intent, source), ...]) in sample order."""
    out = []
    # 88 MinGPTNewGelu: elementwise; five block sizes, a wrong constant, a compile error, a cheat
    gelu = lambda block, c0="0.044715": GELU.replace("{BLOCK}", str(block)).replace("{C0}", c0)
    out.append((88, [("correct", gelu(b)) for b in (256, 512, 1024, 2048, 4096)]
                + [("wrong", gelu(1024, "0.05")), ("compile-error", compile_error(gelu(1024))),
                   ("cheat-never-launched", cheat_never_launched(
                       "0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * torch.pow(x, 3.0))))",
                       "x"))]))
    # 12 diag(A) @ B: a broadcast product
    diag = lambda block, row="offs // M": DIAG.replace("{BLOCK}", str(block)).replace("{ROW}", row)
    out.append((12, [("correct", diag(b)) for b in (256, 512, 1024, 2048, 4096)]
                + [("wrong", diag(1024, "offs % M")), ("syntax-error", syntax_error(diag(1024))),
                   ("cheat-copy", cheat_copy("A.unsqueeze(1) * B", "A, B"))]))
    # 40 LayerNorm over (64, 256, 256): per-row sums by atomics, then the normalisation
    ln = lambda block, rstd="1.0 / tl.sqrt(var + eps)": LAYER_NORM.replace("{BLOCK}", str(block)).replace("{RSTD}", rstd)
    init = "    def __init__(self, normalized_shape: tuple):\n        super().__init__()\n" \
           "        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)\n"
    out.append((40, [("correct", ln(b)) for b in (256, 512, 1024, 2048, 4096)]
                + [("wrong", ln(1024, "1.0 / (var + eps)")), ("compile-error", compile_error(ln(1024))),
                   ("cheat-never-launched", cheat_never_launched("self.ln(x)", "x", init))]))
    # matmuls: two correct block shapes (fp32 FMA: KernelBench's fp32 tolerance), a cheat, a failure
    failures = {1: "syntax-error", 2: "wrong-k-loop", 8: "compile-error", 10: "wrong-k-loop", 13: "syntax-error",
                14: "wrong-tf32", 15: "wrong-tf32", 16: "compile-error", 17: "wrong-k-loop", 18: "compile-error"}
    for task, (operands, tri, expr) in MATMUL_TASKS.items():
        a, b = matmul_candidate(task, 64, 64, 32, 4), matmul_candidate(task, 128, 64, 32, 8)
        kind = failures[task]
        if kind == "syntax-error":
            bad = syntax_error(a)
        elif kind == "compile-error":
            bad = compile_error(a)
        elif kind == "wrong-k-loop":  # skips the first K block
            bad = matmul_candidate(task, 64, 64, 32, 4, k_start="BK")
        else:  # TF32 products: over KernelBench's fp32 tolerance (0.73 off on the H200)
            bad = matmul_candidate(task, 64, 64, 32, 4, precision="")
        cheat = cheat_copy(expr, "A, B") if task % 2 else cheat_never_launched(expr, "A, B")
        out.append((task, [("correct", a), ("correct", b),
                           ("cheat-copy" if task % 2 else "cheat-never-launched", cheat),
                           (kind, bad)]))
    return out


def task_file(tasks, problem):
    for name in os.listdir(tasks):
        if name.split("_", 1)[0] == str(problem) and name.endswith(".py"):
            return os.path.join(tasks, name)
    raise SystemExit(f"no task {problem}_*.py in {tasks}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", required=True, help="KernelBench's KernelBench/level1 folder")
    p.add_argument("--out", required=True, help="the run folder to write the candidates into")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    manifest = []
    for problem, samples in candidates():
        task_file(args.tasks, problem)  # the task must exist
        for sample, (intent, source) in enumerate(samples):
            name = f"level_1_problem_{problem}_sample_{sample}_kernel.py"
            with open(os.path.join(args.out, name), "w") as f:
                f.write(f"# generated by scripts/gpu-proof/gen_level1_candidates.py: {intent}\n" + source)
            manifest.append({"id": name, "problem": problem, "sample": sample, "intent": intent})
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"{len(manifest)} candidates for {len({m['problem'] for m in manifest})} level-1 tasks in {args.out}",
          file=sys.stderr)
    return manifest


if __name__ == "__main__":
    main()
