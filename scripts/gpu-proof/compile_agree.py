"""Does `kernel-lsp check --compile` (no GPU used) agree with launching on a real GPU?

Generates candidate files (one kernel each, launched by a `run()` that returns
the compiled kernel): elementwise, row-softmax and tl.dot matmul kernels over
dtypes, block sizes, warps and stages, and the compile errors kernel-lsp must
find (a dot whose reduction dimensions differ, `msk=`, an undefined name, a
bare `float32`, `break`, `tl.arange(0, 48)`, a runtime arange bound). Then:

1. `kernel-lsp check --compile --format json DIR` compiles every candidate in
   the user's Triton (the worker asks the driver for this GPU's capability);
2. each candidate is imported (these are our own generated files) and its
   `run()` launched on the GPU: a CompilationError is the GPU's "error"
   verdict, else the launched kernel's `n_regs`, `n_spills` and
   `metadata.shared` are the GPU's figures;
3. verdicts and figures are compared per candidate; the table and a JSON
   record go to --out. Exit status 0 when every verdict agrees, no compile
   error is reported on a kernel that compiles, and every figure is equal.

Run on a machine with a GPU, torch and triton:
    python scripts/gpu-proof/compile_agree.py --kernel-lsp target/release/kernel-lsp --out /tmp/compile-agree
"""

import argparse
import importlib.util
import itertools
import json
import os
import subprocess
import sys
import traceback

HEADER = """import torch
import triton
import triton.language as tl

"""

ELEMENTWISE = HEADER + """N = {n}


@triton.jit
def {name}(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.where(x > 0, x * 2.0, tl.exp(x.to(tl.float32)).to(x.dtype))
    tl.store(y_ptr + offs, y, mask=mask)


def run():
    x = torch.randn(N, device="cuda", dtype={dtype})
    y = torch.empty_like(x)
    return {name}[(triton.cdiv(N, {block}),)](x, y, N, BLOCK={block}, num_warps={warps})
"""

SOFTMAX = HEADER + """ROWS = 256
COLS = {cols}


@triton.jit
def {name}(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


def run():
    x = torch.randn((ROWS, COLS), device="cuda", dtype={dtype})
    y = torch.empty_like(x)
    return {name}[(ROWS,)](x, y, COLS, COLS, BLOCK={block}, num_warps={warps})
"""

MATMUL = HEADER + """M = 512
N = 512
K = 512


@triton.jit
def {name}(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty))


def run():
    a = torch.randn((M, K), device="cuda", dtype={dtype})
    b = torch.randn((K, N), device="cuda", dtype={dtype})
    c = torch.empty((M, N), device="cuda", dtype={dtype})
    grid = (M // {bm}, N // {bn})
    return {name}[grid](a, b, c, M, N, K, BM={bm}, BN={bn}, BK={bk}, num_warps={warps}, num_stages={stages})
"""

ERRORS = {
    "dot_mismatch": """
@triton.jit
def {name}(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    k = tl.arange(0, 2 * BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
    b = tl.load(b_ptr + k[:, None] * BLOCK + r[None, :])
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, b))


def run():
    a = torch.randn((32, 32), device="cuda", dtype=torch.float16)
    b = torch.randn((64, 32), device="cuda", dtype=torch.float16)
    c = torch.empty((32, 32), device="cuda", dtype=torch.float16)
    return {name}[(1,)](a, b, c, BLOCK=32)
""",
    "msk": """
@triton.jit
def {name}(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, msk=offs < n) + 1, mask=offs < n)


def run():
    x = torch.zeros(128, device="cuda")
    return {name}[(1,)](x, x.numel(), BLOCK=128)
""",
    "undefined": """
@triton.jit
def {name}(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * scale_factor)


def run():
    x = torch.zeros(128, device="cuda")
    return {name}[(1,)](x, BLOCK=128)
""",
    "bare_dtype": """
@triton.jit
def {name}(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs).to(float32))


def run():
    x = torch.zeros(128, device="cuda")
    return {name}[(1,)](x, BLOCK=128)
""",
    "break": """
@triton.jit
def {name}(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(4):
        if i == 2:
            break
        acc += tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, acc, mask=offs < n)


def run():
    x = torch.zeros(128, device="cuda")
    return {name}[(1,)](x, x.numel(), BLOCK=128)
""",
    "arange48": """
@triton.jit
def {name}(x_ptr):
    cols = tl.arange(0, 48)
    tl.store(x_ptr + cols, tl.load(x_ptr + cols) + 1)


def run():
    x = torch.zeros(64, device="cuda")
    return {name}[(1,)](x)
""",
    "runtime_bound": """
@triton.jit
def {name}(x_ptr, BLOCK: tl.constexpr):
    n = BLOCK
    offs = tl.arange(0, n)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)


def run():
    x = torch.zeros(64, device="cuda")
    return {name}[(1,)](x, BLOCK=64)
""",
}

DTYPES = {"fp32": "torch.float32", "fp16": "torch.float16", "bf16": "torch.bfloat16"}


def candidates():
    """(file name, kernel name, source) for every generated candidate."""
    out = []
    for i, (dtype, block, warps) in enumerate(itertools.product(DTYPES, [256, 1024, 4096], [1, 4, 8])):
        name = f"ew_{i}"
        out.append((name, ELEMENTWISE.format(name=name, n=1 << 20, dtype=DTYPES[dtype], block=block, warps=warps)))
    for i, (dtype, cols, warps) in enumerate(itertools.product(DTYPES, [100, 1000, 4096], [4, 8])):
        name = f"softmax_{i}"
        block = 1 << (cols - 1).bit_length()
        out.append((name, SOFTMAX.format(name=name, cols=cols, dtype=DTYPES[dtype], block=block, warps=warps)))
    tiles = [(64, 64, 32, 4, 3), (128, 128, 32, 8, 3), (128, 64, 64, 4, 4), (64, 128, 64, 4, 2), (128, 128, 64, 8, 4)]
    for i, (dtype, (bm, bn, bk, warps, stages)) in enumerate(itertools.product(["fp16", "bf16", "fp32"], tiles)):
        name = f"mm_{i}"
        out.append((name, MATMUL.format(name=name, dtype=DTYPES[dtype], bm=bm, bn=bn, bk=bk, warps=warps,
                                        stages=stages)))
    for kind, body in ERRORS.items():
        name = f"err_{kind}"
        out.append((name, HEADER + body.format(name=name)))
    return out


def write(dir_, cands):
    os.makedirs(dir_, exist_ok=True)
    for name, src in cands:
        with open(os.path.join(dir_, f"{name}.py"), "w") as f:
            f.write(src)


def kernel_lsp_view(binary, dir_):
    """{kernel: {"verdict", "n_regs", "n_spills", "shared", "message"}} from check --compile."""
    out = subprocess.run([binary, "check", "--compile", "--format", "json", dir_], capture_output=True, text=True)
    doc = json.loads(out.stdout)
    if doc["compile"].get("error"):
        sys.exit(f"check --compile could not compile: {doc['compile']['error']}")
    view = {}
    for k in doc["compile"]["kernels"]:
        view[k["kernel"]] = {"verdict": "compiled", "n_regs": k["n_regs"], "n_spills": k["n_spills"],
                             "shared": k["shared"], "target": k["target"], "assumed": k["assumed"]}
    for d in doc["diagnostics"]:
        kernel = os.path.splitext(os.path.basename(d["file"]))[0]
        if d["code"] == "KL901":
            view[kernel] = {"verdict": "error", "severity": d["severity"], "message": d["message"], "line": d["line"]}
        elif d["code"] == "KL006" and kernel in view:
            # The compiler's shared memory over the target's limit: the launch fails with OutOfResources.
            view[kernel]["verdict"] = "out-of-resources"
    return view, doc["compile"]


def gpu_view(dir_, cands):
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import OutOfResources

    view = {}
    for name, _ in cands:
        path = os.path.join(dir_, f"{name}.py")
        spec = importlib.util.spec_from_file_location(f"cand_{name}", path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
            k = module.run()
            import torch

            torch.cuda.synchronize()
            view[name] = {"verdict": "compiled", "n_regs": k.n_regs, "n_spills": k.n_spills,
                          "shared": k.metadata.shared}
        except CompilationError as e:
            view[name] = {"verdict": "error", "message": str(e).strip().splitlines()[-1]}
        except OutOfResources as e:
            view[name] = {"verdict": "out-of-resources", "message": str(e)}
        except Exception as e:
            view[name] = {"verdict": "exception", "message": "".join(traceback.format_exception_only(type(e), e))}
    return view


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kernel-lsp", required=True)
    p.add_argument("--out", default="compile-agree")
    p.add_argument("--no-gpu", action="store_true", help="only kernel-lsp's side (to check the script without a GPU)")
    args = p.parse_args()
    cands = candidates()
    dir_ = os.path.join(args.out, "candidates")
    write(dir_, cands)
    with open(os.path.join(dir_, "kernel-lsp.toml"), "w") as f:
        f.write(f"python = {json.dumps(sys.executable)}\n")
    klsp, summary = kernel_lsp_view(args.kernel_lsp, dir_)
    if args.no_gpu:
        for name, _ in cands:
            print(name, json.dumps(klsp.get(name, {"verdict": "missing"})))
        return
    gpu = gpu_view(dir_, cands)
    rows, failures = [], []
    figures_compared = 0
    for name, _ in cands:
        a, g = klsp.get(name, {"verdict": "missing"}), gpu[name]
        same_verdict = a["verdict"] == g["verdict"]
        same_figures = None
        if same_verdict and g["verdict"] in ("compiled", "out-of-resources") and "n_regs" in g:
            figures_compared += 1
            same_figures = all(a.get(f) == g.get(f) for f in ("n_regs", "n_spills", "shared"))
        if not same_verdict or same_figures is False:
            failures.append(name)
        rows.append({"candidate": name, "kernel_lsp": a, "gpu": g, "same_verdict": same_verdict,
                     "same_figures": same_figures})
    false_errors = [r["candidate"] for r in rows
                    if r["kernel_lsp"]["verdict"] == "error" and r["gpu"]["verdict"] == "compiled"]
    lines = [f"Triton {summary['triton']}, target {summary['target']} ({summary['target_from']}); "
             f"{len(cands)} candidates, {figures_compared} with figures compared", "",
             "| candidate | kernel-lsp | GPU | verdict | regs / spills / shared (kernel-lsp vs GPU) |",
             "|---|---|---|---|---|"]
    for r in rows:
        a, g = r["kernel_lsp"], r["gpu"]
        figs = "" if r["same_figures"] is None else (
            f"{a.get('n_regs')}/{a.get('n_spills')}/{a.get('shared')} vs {g.get('n_regs')}/{g.get('n_spills')}/{g.get('shared')}")
        lines.append(f"| {r['candidate']} | {a['verdict']} | {g['verdict']} | "
                     f"{'same' if r['same_verdict'] else 'DIFFERENT'} | {figs} |")
    lines += ["", f"verdicts agree: {sum(r['same_verdict'] for r in rows)} of {len(rows)}",
              f"compile errors reported on kernels that compile: {len(false_errors)} {false_errors}",
              f"figures equal: {sum(1 for r in rows if r['same_figures'])} of {figures_compared}",
              f"PROOF: {'PASS' if not failures else 'FAIL ' + ', '.join(failures)}"]
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.out, "compile_agree.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(args.out, "compile_agree.json"), "w") as f:
        json.dump({"summary": summary, "rows": rows}, f, indent=1, default=str)
    sys.exit(0 if not failures else 1)


if __name__ == "__main__":
    main()
