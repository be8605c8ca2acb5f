#!/usr/bin/env python3
"""Calibrate KL006 (shared-memory-over-limit): how much shared memory does Triton
really allocate for a plain `tl.dot` matmul pipeline?

For a grid of launch configs (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps,
dtype) this compiles a standard tiled matmul kernel and records the compiled
kernel's `metadata.shared` (bytes of dynamic shared memory Triton asks for),
`n_regs`, `n_spills`, whether loading it raised `OutOfResources` (and the
"Required: N" figure of its message), and the shared-memory buffers Triton
allocated, read from the TTGIR (`ttg.local_alloc` shapes and the `ttg.shared`
module attribute).

Two back ends:
  * launch (default when a CUDA GPU is visible): launches the kernel once on small
    tensors through the normal JIT path, exactly as a user launch would, and
    checks the result against torch (relative error, informative only);
  * ast (no GPU needed): compiles through `triton.compile(ASTSource(...))` for a
    given target (default sm_90), with the same argument specialization the JIT
    would pick. Gives `shared` but not n_regs/n_spills.

Output: one JSON line per config on stdout, a CSV (--out), and a JSON header
line with the device, its shared-memory limit and the triton version.

Reproduce on an H100:  python3 scripts/calibrate_smem.py --out $OUT/smem.csv
Without a GPU:          python3 scripts/calibrate_smem.py --backend ast --arch 90 --out smem.csv
Score the estimate:     python3 scripts/calibrate_smem.py --fit scripts/smem_calibration.csv
"""
import argparse
import csv
import itertools
import json
import os
import re
import sys
import time
import traceback

import triton
import triton.language as tl

# Problem size used for the launch / specialization. All multiples of 16 so the
# JIT specializes them as divisible-by-16 like a typical real launch.
M_SIZE, N_SIZE, K_SIZE = 256, 256, 512


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


DTYPES = {"fp16": 2, "fp32": 4}
FIELDS = ["dtype", "elem_bytes", "BLOCK_M", "BLOCK_N", "BLOCK_K", "num_stages", "num_warps",
          "status", "shared", "required", "max_shared", "n_regs", "n_spills", "mma",
          "local_allocs", "alloc_bytes", "rel_err", "compile_s", "backend", "arch", "error"]


def default_warps(bm, bn):
    return 4 if bm * bn <= 128 * 64 else 8


def make_configs():
    """Core grid: every tile x stages x dtype with the usual warp count; plus the
    other warp count on a subset; plus BLOCK_K=16 single-stage epilogue probes. Absurd combos skipped: 256x256 tiles at 4 warps
    (the fp32 accumulator alone is 512 registers/thread)."""
    seen, out = set(), []

    def add(dt, bm, bn, bk, s, w):
        if bm * bn >= 256 * 256 and w < 8:
            return
        key = (dt, bm, bn, bk, s, w)
        if key not in seen:
            seen.add(key)
            out.append(dict(dtype=dt, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_stages=s, num_warps=w))

    tiles = [32, 64, 128, 256]
    # 1) priority subset first (so a cut-short run still covers the fit)
    for dt, (bm, bn), bk, s in itertools.product(["fp16", "fp32"], [(64, 64), (128, 128), (128, 64), (64, 256), (256, 128)],
                                                 [32, 64, 128], [1, 2, 3, 4, 5]):
        add(dt, bm, bn, bk, s, default_warps(bm, bn))
    # 2) full core grid
    for dt, bm, bn, bk, s in itertools.product(["fp16", "fp32"], tiles, tiles, [32, 64, 128], [1, 2, 3, 4, 5]):
        add(dt, bm, bn, bk, s, default_warps(bm, bn))
    # 3) other warp count on a subset
    for dt, bm, bn, bk, s in itertools.product(["fp16", "fp32"], [64, 128], [64, 128], [32, 64], [1, 3, 4]):
        add(dt, bm, bn, bk, s, 12 - default_warps(bm, bn))
    # 4) epilogue probes: BLOCK_K=16, one stage, so the operand buffers are small and
    #    `shared` shows the scratch of the accumulator's layout conversion before the store
    for dt, bm, bn, w in itertools.product(["fp16", "fp32"], tiles, tiles, [4, 8]):
        add(dt, bm, bn, 16, 1, w)
    return out


# --------------------------------------------------------------------------------------
# The estimate for KL006 (fitted to Triton 3.6 on sm_90, see scripts/smem_calibration.md)
def uses_wgmma(block_m, num_warps, arch=90):
    """Triton lowers tl.dot to Hopper wgmma (MMAv3) on sm_90 when the tile's M is a
    multiple of 64 and num_warps a multiple of 4 (fp16/bf16/tf32/fp8 operands); else mma.sync (MMAv2)."""
    return arch == 90 and block_m % 64 == 0 and num_warps % 4 == 0


def estimate_smem(block_m, block_n, block_k, num_stages, num_warps, elem_bytes, out_bytes=None, arch=90):
    out_bytes = elem_bytes if out_bytes is None else out_bytes
    if uses_wgmma(block_m, num_warps, arch):
        buffers = max(1, num_stages)          # wgmma reads operands from smem: one buffer per stage
    else:
        buffers = max(1, num_stages - 1)      # mma.sync / cp.async pipeline: num_stages - 1 buffers
    operands = buffers * (block_m * block_k + block_k * block_n) * elem_bytes
    # epilogue: accumulator layout conversion before the store, reuses the operand buffers
    # (liveness), so it counts through max(); upper bound, capped per warpgroup
    cap = (num_warps // 4 or 1) * (16384 if out_bytes <= 2 else 65536)
    epilogue = min(block_m * block_n * out_bytes, cap)
    return max(operands, epilogue)


def fit_report(path):
    import statistics
    rows = list(csv.DictReader(open(path)))
    for r in rows:
        for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_stages", "num_warps", "elem_bytes", "shared", "arch"):
            r[k] = int(r[k])
    limit = next((int(r["max_shared"]) for r in rows if r.get("max_shared")), 232448)

    def report(name, rs):
        errs = [(estimate_smem(r["BLOCK_M"], r["BLOCK_N"], r["BLOCK_K"], r["num_stages"], r["num_warps"],
                               r["elem_bytes"], arch=r["arch"]) - r["shared"]) / r["shared"] for r in rs]
        a = [abs(e) for e in errs]
        mis = sum((estimate_smem(r["BLOCK_M"], r["BLOCK_N"], r["BLOCK_K"], r["num_stages"], r["num_warps"],
                                 r["elem_bytes"], arch=r["arch"]) > limit) != (r["shared"] > limit) for r in rs)
        print(f"{name:28s} n={len(rs):3d} exact={sum(e == 0 for e in errs):3d} under={sum(e < 0 for e in errs):2d} "
              f"max|err|={max(a) * 100:6.1f}% median={statistics.median(a) * 100:5.2f}% mean={statistics.mean(a) * 100:5.2f}% "
              f"over-limit misclassified={mis} (limit {limit})")

    report("all configs", rows)
    report("grid (BLOCK_K>=32)", [r for r in rows if r["BLOCK_K"] >= 32])
    report("epilogue probes (BLOCK_K=16)", [r for r in rows if r["BLOCK_K"] == 16])
    report("OutOfResources (Required)", [r for r in rows if r["status"].startswith("oor")])
    print("worst:")
    worst = sorted(rows, key=lambda r: -abs(estimate_smem(r["BLOCK_M"], r["BLOCK_N"], r["BLOCK_K"], r["num_stages"],
                                                          r["num_warps"], r["elem_bytes"], arch=r["arch"]) - r["shared"]) / r["shared"])
    for r in worst[:12]:
        est = estimate_smem(r["BLOCK_M"], r["BLOCK_N"], r["BLOCK_K"], r["num_stages"], r["num_warps"], r["elem_bytes"], arch=r["arch"])
        print(f"  {r['dtype']} M{r['BLOCK_M']} N{r['BLOCK_N']} K{r['BLOCK_K']} s{r['num_stages']} w{r['num_warps']} "
              f"{r['mma']:5s} measured={r['shared']} estimate={est} ({(est - r['shared']) / r['shared'] * 100:+.1f}%)")


_ALLOC_RE = re.compile(r"ttg\.local_alloc[^\n]*?->\s*!ttg\.memdesc<([0-9x]+)x(\w+),")
_ELEM_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i8": 1, "i32": 4, "i64": 8, "f64": 8}


def ttgir_summary(ttgir):
    """Shapes of the explicit shared buffers (ttg.local_alloc) in the TTGIR, their
    total bytes (scratch for layout conversions is added later, at allocation,
    and is not visible here), and which MMA the dot lowered to."""
    allocs, total = [], 0
    for m in _ALLOC_RE.finditer(ttgir or ""):
        allocs.append(f"{m.group(1)}x{m.group(2)}")
        n = 1
        for d in m.group(1).split("x"):
            n *= int(d)
        total += n * _ELEM_BYTES.get(m.group(2), 0)
    if "warp_group_dot" in (ttgir or ""):
        mma = "wgmma"
    elif "ttg.dot_op" in (ttgir or "") or "nvidia_mma" in (ttgir or ""):
        mma = "mma"
    else:
        mma = "fma"
    return ";".join(allocs), total, mma


_REQ_RE = re.compile(r"Required:\s*(\d+)")
_LIM_RE = re.compile(r"Hardware limit:\s*(\d+)")


def run_launch(cfg):
    import torch
    from triton.runtime.errors import OutOfResources
    interp = os.environ.get("TRITON_INTERPRET") == "1"  # CPU-only logic check; reports no shared memory
    dev = "cpu" if interp else "cuda"
    tdt = {"fp16": torch.float16, "fp32": torch.float32}[cfg["dtype"]]
    g = torch.Generator(device=dev).manual_seed(0)
    a = torch.randn(M_SIZE, K_SIZE, device=dev, dtype=torch.float32, generator=g).to(tdt)
    b = torch.randn(K_SIZE, N_SIZE, device=dev, dtype=torch.float32, generator=g).to(tdt)
    c = torch.full((M_SIZE, N_SIZE), float("nan"), device=dev, dtype=tdt)  # poisoned
    grid = (triton.cdiv(M_SIZE, cfg["BLOCK_M"]), triton.cdiv(N_SIZE, cfg["BLOCK_N"]))
    row = {}
    try:
        cache = matmul_kernel.device_caches[torch.cuda.current_device()][0] if not interp else {}
        keys_before = set(cache.keys())
    except Exception:
        cache, keys_before = {}, set()
    try:
        k = matmul_kernel[grid](a, b, c, M_SIZE, N_SIZE, K_SIZE, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                c.stride(0), c.stride(1), BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                                BLOCK_K=cfg["BLOCK_K"], num_stages=cfg["num_stages"], num_warps=cfg["num_warps"])
        if not interp:
            torch.cuda.synchronize()
        ref = a.double() @ b.double()
        err = ((c.double() - ref).norm() / ref.norm()).item()  # NaN if any element was not written
        row.update(rel_err=err)
        if interp or k is None:
            row.update(status="interpreted")
        else:
            row.update(status="ok", shared=k.metadata.shared, n_regs=k.n_regs, n_spills=k.n_spills)
            row["_ttgir"] = k.asm.get("ttgir", "")
    except OutOfResources as e:
        msg = str(e)
        req = getattr(e, "required", None)
        lim = getattr(e, "limit", None)
        if req is None:
            m = _REQ_RE.search(msg)
            req = int(m.group(1)) if m else None
        if lim is None:
            m = _LIM_RE.search(msg)
            lim = int(m.group(1)) if m else None
        row.update(status="oor", required=req, max_shared=lim, error=msg.splitlines()[0][:200])
        if getattr(e, "name", "shared memory") != "shared memory":
            row["status"] = "oor_" + str(e.name).replace(" ", "_")
        # the compiled (but unloadable) kernel stays in the JIT's cache under the key this launch added
        try:
            new_keys = [kk for kk in cache.keys() if kk not in keys_before]
            if len(new_keys) == 1:
                kk = cache[new_keys[0]]
                kk = kk.result() if hasattr(kk, "result") else kk
                row["shared"] = kk.metadata.shared
                row["_ttgir"] = kk.asm.get("ttgir", "")
        except Exception:
            pass
    return row


def run_ast(cfg, arch):
    from triton.compiler import ASTSource
    from triton.backends.compiler import GPUTarget
    ptr = {"fp16": "*fp16", "fp32": "*fp32"}[cfg["dtype"]]
    # Mirror the JIT's specialization for contiguous (M,K)@(K,N)->(M,N) tensors:
    # pointers 16-byte aligned, ints divisible by 16 get tt.divisibility=16, ints == 1 become constexpr.
    ints = dict(M=M_SIZE, N=N_SIZE, K=K_SIZE, stride_am=K_SIZE, stride_ak=1, stride_bk=N_SIZE, stride_bn=1,
                stride_cm=N_SIZE, stride_cn=1)
    names = matmul_kernel.arg_names
    sig, constexprs, attrs = {}, {}, {}
    for i, name in enumerate(names):
        if name in ("a_ptr", "b_ptr", "c_ptr"):
            sig[name] = ptr
            attrs[(i, )] = [["tt.divisibility", 16]]
        elif name in ints:
            v = ints[name]
            if v == 1:
                sig[name] = "constexpr"
                constexprs[name] = 1
            else:
                sig[name] = "i32"
                if v % 16 == 0:
                    attrs[(i, )] = [["tt.divisibility", 16]]
        else:
            sig[name] = "constexpr"
            constexprs[name] = cfg[name]
    src = ASTSource(matmul_kernel, sig, constexprs, attrs)
    k = triton.compile(src, target=GPUTarget("cuda", arch, 32),
                       options=dict(num_warps=cfg["num_warps"], num_stages=cfg["num_stages"]))
    return dict(status="compiled", shared=k.metadata.shared, _ttgir=k.asm.get("ttgir", ""))


def worker(args):
    cfg, backend, arch = args
    row = dict(cfg)
    row["elem_bytes"] = DTYPES[cfg["dtype"]]
    row["backend"] = backend
    row["arch"] = arch
    t0 = time.time()
    try:
        res = run_launch(cfg) if backend == "launch" else run_ast(cfg, arch)
        row.update(res)
    except Exception as e:  # record, never crash the sweep
        row["status"] = "error"
        row["error"] = (type(e).__name__ + ": " + str(e)).replace("\n", " ")[:300]
        if os.environ.get("CALIB_DEBUG"):
            traceback.print_exc()
    row["compile_s"] = round(time.time() - t0, 2)
    ttgir = row.pop("_ttgir", None)
    if ttgir:
        row["local_allocs"], row["alloc_bytes"], row["mma"] = ttgir_summary(ttgir)
    return row


def init_worker():
    os.environ.setdefault("PYTHONUNBUFFERED", "1")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="smem.csv")
    ap.add_argument("--backend", choices=["auto", "launch", "ast"], default="auto")
    ap.add_argument("--arch", type=int, default=None, help="ast backend: compute capability, e.g. 90")
    ap.add_argument("--jobs", type=int, default=0, help="worker processes (0 = cpu count)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N configs")
    ap.add_argument("--time-budget", type=float, default=0, help="stop submitting after this many seconds")
    ap.add_argument("--list", action="store_true", help="print the configs and exit")
    ap.add_argument("--fit", metavar="CSV", help="no compiling: score estimate_smem() against a measured CSV")
    args = ap.parse_args()
    if args.fit:
        fit_report(args.fit)
        return

    configs = make_configs()
    if args.limit:
        configs = configs[:args.limit]
    if args.list:
        for c in configs:
            print(json.dumps(c))
        print(f"{len(configs)} configs", file=sys.stderr)
        return

    header = {"triton": triton.__version__, "n_configs": len(configs)}
    backend = args.backend
    has_gpu = False
    try:
        import torch
        header["torch"] = torch.__version__
        has_gpu = torch.cuda.is_available()
        if has_gpu:
            p = torch.cuda.get_device_properties(0)
            header["device"] = p.name
            header["capability"] = list(torch.cuda.get_device_capability(0))
            for attr in ("shared_memory_per_block_optin", "shared_memory_per_block", "shared_memory_per_multiprocessor",
                         "multi_processor_count", "regs_per_multiprocessor"):
                header[attr] = getattr(p, attr, None)
    except Exception as e:
        header["torch_error"] = repr(e)
    if backend == "auto":
        backend = "launch" if has_gpu else "ast"
    arch = args.arch
    if arch is None:
        if has_gpu:
            cc = header["capability"]
            arch = cc[0] * 10 + cc[1]
        else:
            arch = 90
    header.update(backend=backend, arch=arch)
    if has_gpu:
        try:
            from triton.runtime import driver
            header["triton_max_shared"] = driver.active.utils.get_device_properties(0)["max_shared_mem"]
        except Exception as e:
            header["triton_max_shared_error"] = repr(e)
    print(json.dumps({"header": header}), flush=True)

    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.splitext(args.out)[0] + "_header.json", "w") as f:
        json.dump(header, f, indent=1)

    jobs = args.jobs or os.cpu_count() or 1
    t_start = time.time()
    fh = open(args.out, "w", newline="")
    wr = csv.DictWriter(fh, fieldnames=FIELDS, extrasaction="ignore")
    wr.writeheader()
    n_done = 0
    counts = {}

    def emit(row):
        nonlocal n_done
        if row.get("max_shared") is None and "shared_memory_per_block_optin" in header:
            row["max_shared"] = header.get("triton_max_shared") or header["shared_memory_per_block_optin"]
        wr.writerow(row)
        fh.flush()
        print(json.dumps(row), flush=True)
        n_done += 1
        counts[row["status"]] = counts.get(row["status"], 0) + 1

    if jobs <= 1:
        for cfg in configs:
            if args.time_budget and time.time() - t_start > args.time_budget:
                break
            emit(worker((cfg, backend, arch)))
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, wait, FIRST_COMPLETED
        ctx = mp.get_context("spawn")  # each worker gets its own CUDA context
        ex = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=init_worker)
        pending = set()
        it = iter(configs)
        exhausted = False
        while True:
            while not exhausted and len(pending) < 2 * jobs:
                if args.time_budget and time.time() - t_start > args.time_budget:
                    exhausted = True
                    break
                cfg = next(it, None)
                if cfg is None:
                    exhausted = True
                    break
                pending.add(ex.submit(worker, (cfg, backend, arch)))
            if not pending:
                break
            done, pending = wait(pending, timeout=5, return_when=FIRST_COMPLETED)
            for fut in done:
                try:
                    emit(fut.result())
                except Exception as e:
                    print(json.dumps({"worker_error": repr(e)}), flush=True)
            if args.time_budget and time.time() - t_start > args.time_budget + 60:
                print(json.dumps({"abandoned": len(pending)}), flush=True)
                break
        fh.close()
        print(json.dumps({"summary": counts, "done": n_done, "of": len(configs),
                          "wall_s": round(time.time() - t_start, 1)}), flush=True)
        if pending:
            # stuck compiles: end our own worker processes (they hold stdout open), then leave
            for p in list(getattr(ex, "_processes", {}).values()):
                p.kill()
            sys.stdout.flush()
            os._exit(0)
        ex.shutdown(wait=True)
        return
    fh.close()
    print(json.dumps({"summary": counts, "done": n_done, "of": len(configs),
                      "wall_s": round(time.time() - t_start, 1)}), flush=True)


if __name__ == "__main__":
    main()
