"""Is kernel-lsp's KernelBench speedup biased against KernelBench's own, and why?

Over the agreement rounds (agreement.py --kb-twice) kernel-lsp's KernelBench
speedup on launch-bound cuDNN references came out 3-7% below KernelBench's,
inside a per-process noise of tens of percent. This script separates the
timing code from the process that runs it. For one (reference, candidate)
pair it runs, for R rounds, each in a new process and in rotating order:

  a  KernelBench's `eval_kernel_against_ref`, as agreement.py runs it
     (agreement.kernelbench_in_fresh_process: `agreement.py --kb-one`).
  b  `kernel-lsp bench --format json`, as agreement.py runs it
     (agreement.kernel_lsp_verdict).
  c  the harness (server/harness/harness.py, imported as a module, started as
     its `main` starts it: protect_protocol, then run_once with the argv the
     binary gives it, plus --no-profiler), with `kernelbench_timing` wrapped:
     right after the harness's own figure (before its CUDA-graph capture) the
     same process times the candidate, then the reference, in blocks of 100
     trials alternating KernelBench's `time_execution_with_cuda_event` (on
     inputs drawn fresh after `set_seed`, as its evaluator draws them) with
     the harness's `time_cuda_event` (on the harness's inputs): the two
     implementations side by side in one process.
  d  KernelBench's evaluator (the code of `agreement.py --kb-one`) started by
     the kernel-lsp binary in place of the harness (`--python` names a small
     wrapper): the environment, process group, pipes, affinity and parent
     that `kernel-lsp bench` gives the harness, with KernelBench's flow.
  f  the harness run as a script (`python HARNESS run ARGV`, the argv the binary
     gives it, the binary's cached copy when there is one), started by this
     Python driver as agreement.py starts KernelBench: `kernel-lsp bench`
     without the binary.
  e  one process that runs both whole flows alternately (KernelBench's
     evaluator and the harness's run_benchmark, in the order given by
     --mixed-order, flipped every other round): the flows side by side in one
     process, started as the harness starts.

Every process's record is one JSON line in OUT/bias.jsonl, written as soon as
it ends. `--summarize OUT/bias.jsonl` prints the tables. `--as-agreement` turns
the a and b processes of one or more bias.jsonl files into agreement.py's
records (agreement.json's shape, on stdout), for agreement_table.py to pool:
a and b are agreement.py's own two paths, so each round that ran both is one
agreement round (KernelBench's evaluator and `kernel-lsp bench` in new
processes, in the order the probe's rotation gave them); modes c-f are left out.

    python bias_probe.py --kernelbench KB --kernel-lsp BIN --ref REF.py --cand CAND.py \
        [--rounds R] [--modes a,b,c,d,e] [--budget S] [--pin CPU] [--out DIR]
    python bias_probe.py --summarize OUT/bias.jsonl
    python bias_probe.py --as-agreement call1/bias.jsonl [call2/bias.jsonl ...] > runN.json

Needs a GPU, torch, triton and a KernelBench checkout (imported at run time,
through agreement.py's import_kernelbench).
"""

import argparse
import hashlib
import importlib.util
import io
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
HARNESS = os.path.join(REPO, "server", "harness", "harness.py")
SEED = 42
# the argv `kernel-lsp bench CAND --reference REF` gives the harness with default settings
# (server/src/bench/mod.rs harness_args, config.rs defaults)
BENCH_FLAGS = ["--profile", "kernelbench", "--precision", "fp32", "--atol", "0.01", "--rtol", "0.01",
               "--trials", "5", "--warmup", "10", "--repeats", "50"]
DEFAULT_SECONDS = {"a": 15, "b": 30, "c": 50, "d": 18, "e": 50, "f": 30}


# ---------------------------------------------------------------- small helpers


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def read(path):
    with open(path) as f:
        return f.read()


def stats(times):
    if not times:
        return {}
    s = sorted(times)
    n = len(s)
    return {"mean": sum(s) / n, "median": statistics.median(s), "p10": s[n // 10], "min": s[0], "max": s[-1],
            "n": n}


def proc_info():
    """What this process got from whoever started it."""
    keep = ("PYTHON", "CUDA", "TORCH", "PYTORCH", "TRITON", "OMP", "MKL", "OPENBLAS", "LD_", "XDG", "HOME",
            "VIRTUAL_ENV", "PATH", "NCCL", "NV")
    env = dict(os.environ)
    try:
        parent = os.readlink(f"/proc/{os.getppid()}/exe")
    except OSError:
        parent = None
    info = {"pid": os.getpid(), "ppid": os.getppid(), "parent_exe": parent, "pgrp": os.getpgrp(),
            "sid": os.getsid(0), "affinity": sorted(os.sched_getaffinity(0)),
            "nice": os.getpriority(os.PRIO_PROCESS, 0), "env_count": len(env),
            "env_bytes": sum(len(k) + len(v) + 2 for k, v in env.items()),
            "env": {k: v for k, v in env.items() if k.startswith(keep)}, "executable": sys.executable,
            "stdin_tty": os.isatty(0)}
    for fd in (0, 1, 2):
        try:
            info[f"fd{fd}"] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("Cpus_allowed_list", "Threads")):
                    k, v = line.split(":", 1)
                    info[k] = v.strip()
    except OSError:
        pass
    return info


def load_agreement():
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    import agreement

    return agreement


def load_harness(path):
    """harness.py as a module; the binary runs the same text as a script."""
    spec = importlib.util.spec_from_file_location("kernel_lsp_harness", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def import_kb(kb_root):
    """KernelBench's eval and timing modules, from the checkout (agreement.py's stand-ins)."""
    ag = load_agreement()
    kb_eval, stood_in = ag.import_kernelbench(os.path.abspath(kb_root))
    from kernelbench import timing as kb_timing

    return kb_eval, kb_timing, stood_in


def harness_argv(ref, cand, extra=()):
    return ["--candidate", os.path.abspath(cand), "--reference", os.path.abspath(ref), *BENCH_FLAGS, *extra]


def round_trials(times):
    return [round(t, 4) for t in times]


# ---------------------------------------------------------------- c: the harness, with A/B blocks


def ab_blocks(opts, harness_tce, ref, new, harness_inputs):
    """Right after the harness's own figure, in its process: KernelBench's timing
    function (fresh inputs after set_seed, as its evaluator draws them) and the
    harness's, alternating per --pattern-new / --pattern-ref (K = KernelBench, H = harness)."""
    import torch

    t_import = time.time()
    kb_eval, kb_timing, stood_in = import_kb(opts.kernelbench)
    _, _, get_inputs = kb_eval.load_original_model_and_inputs(read(opts.ref), {})
    device = torch.cuda.current_device()
    out = {"kb_import_s": time.time() - t_import, "stood_in": stood_in, "blocks": []}

    def kb_inputs():
        torch.cuda.synchronize(device=device)
        kb_eval.set_seed(SEED)
        inputs = get_inputs()
        return [kb_eval._process_input_tensor(x, device, "triton", torch.float32) for x in inputs]

    for name, model, pattern in (("new", new, opts.pattern_new), ("ref", ref, opts.pattern_ref)):
        for impl in pattern:
            t0 = time.time()
            if impl == "K":
                inputs = kb_inputs()
                times = kb_timing.time_execution_with_cuda_event(model, inputs, num_trials=100, verbose=False,
                                                                 device=device)
            else:
                times = harness_tce(model, harness_inputs)
            out["blocks"].append({"model": name, "impl": "kb" if impl == "K" else "harness", "t0": t0,
                                  "seconds": time.time() - t0, **stats(times), "trials": round_trials(times)})
            print(f"[probe] {name} {impl}: mean {out['blocks'][-1]['mean']:.3f} ms", file=sys.stderr, flush=True)
    return out


def install_hooks(h, opts):
    """Wraps the harness module's emit (to keep its result), kernelbench_timing and
    time_cuda_event (to run ab_blocks once the harness's own figure is taken:
    after its second time_cuda_event call, before the CUDA-graph capture)."""
    state = {"active": False, "calls": None, "ab": None, "result": None}
    orig_emit, orig_tce, orig_kbt = h.emit, h.time_cuda_event, h.kernelbench_timing

    def emit(obj):
        if obj.get("type") == "result":
            state["result"] = obj
        orig_emit(obj)

    def tce(fn, inputs):
        times = orig_tce(fn, inputs)
        if state["active"]:
            state["calls"].append(stats(times))
            if len(state["calls"]) == 2:  # the harness's figure is complete: candidate, then reference
                state["ab"] = ab_blocks(opts, orig_tce, state["ref"], state["new"], inputs)
        return times

    def kbt(ref, new, inputs, result):
        state.update(active=True, calls=[], ref=ref, new=new)
        try:
            return orig_kbt(ref, new, inputs, result)
        finally:
            state.update(active=False, ref=None, new=None)

    h.emit, h.time_cuda_event, h.kernelbench_timing = emit, tce, kbt
    return state


def probe_one(opts):
    rec = {"proc": proc_info(), "harness": opts.harness, "harness_sha256": sha256(opts.harness)}
    h = load_harness(opts.harness)
    state = install_hooks(h, opts)
    h.protect_protocol()  # as harness.py's main: protocol on a saved fd, fd 1 -> stderr
    started = time.time()
    try:
        h.run_once(harness_argv(opts.ref, opts.cand, ["--no-profiler"]))
    except BaseException as e:  # noqa: BLE001 - recorded
        rec["exception"] = repr(e)
    res = state["result"] or {}
    rec["seconds_in_harness"] = time.time() - started
    rec["harness_calls"] = state["calls"]
    rec["ab"] = state["ab"]
    for k in ("correct", "error", "kernelbench_ref_ms", "kernelbench_new_ms", "kernelbench_speedup", "graph_ref_ms",
              "ref_ms", "new_ms", "speedup", "phase_s", "pid", "device", "mode"):
        rec[k] = res.get(k)
    with open(opts.record, "w") as f:
        json.dump(rec, f, default=str)


# ---------------------------------------------------------------- d: KernelBench's flow, started by the binary


def kb_flow(kb_root, ref, cand, log_path):
    """agreement.py --kb-one's code path: import KernelBench, evaluate once."""
    ag = load_agreement()
    kb_eval, stood_in = ag.import_kernelbench(os.path.abspath(kb_root))
    with open(log_path, "a") as log:
        log.write(f"\n===== {os.path.basename(cand)} vs {os.path.basename(ref)} (pid {os.getpid()})\n")
        r = ag.kernelbench_verdict(kb_eval, read(ref), read(cand), log)
    return r, stood_in


def as_harness(kb_root, log_path, argv):
    """Stands in for harness.py under `kernel-lsp bench --python WRAPPER`: argv is
    [HARNESS_PATH, "run", --candidate C, --reference R, ...]. Runs KernelBench's
    flow and answers in the harness's protocol."""
    info = proc_info()
    print(json.dumps({"type": "started", "pid": os.getpid()}), flush=True)
    cand = argv[argv.index("--candidate") + 1]
    ref = argv[argv.index("--reference") + 1]
    try:
        r, _ = kb_flow(kb_root, ref, cand, log_path)
    except BaseException as e:  # noqa: BLE001
        r = {"correct": None, "why": f"raised {type(e).__name__}: {e}"}
    out = {"type": "result", "mode": "gpu", "correct": r.get("correct"), "kernelbench_speedup": r.get("speedup"),
           "kernelbench_ref_ms": r.get("ref_ms"), "kernelbench_new_ms": r.get("new_ms"),
           "probe_kb": r, "probe_proc": info, "probe_harness_path": argv[0],
           "probe_harness_sha256": sha256(argv[0]) if os.path.isfile(argv[0]) else None}
    print(json.dumps(out, default=str), flush=True)


def write_wrapper(opts):
    """A Python file with this interpreter in its shebang, for `--python`."""
    folder = os.path.join("/tmp", f"bias-probe-{os.getpid()}")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "python-as-kernelbench")
    with open(path, "w") as f:
        f.write(f"#!{sys.executable}\n"
                f"import sys\nsys.path.insert(0, {HERE!r})\nimport bias_probe\n"
                f"bias_probe.as_harness({os.path.abspath(opts.kernelbench)!r}, {opts.log!r}, sys.argv[1:])\n")
    os.chmod(path, 0o755)
    return path


# ---------------------------------------------------------------- e: both flows in one process


def mixed_one(opts):
    rec = {"proc": proc_info(), "order": opts.mixed_order, "flows": []}
    h = load_harness(opts.harness)
    h.protect_protocol()  # as the harness starts: protocol fd saved, fd 1 -> stderr
    mode = h.import_torch_and_triton(False)
    ag = load_agreement()
    kb_eval, stood_in = ag.import_kernelbench(os.path.abspath(opts.kernelbench))
    rec["stood_in"] = stood_in
    ref_src, cand_src = read(opts.ref), read(opts.cand)
    for flow in opts.mixed_order:
        t0 = time.time()
        if flow == "K":
            with open(opts.log, "a") as log:
                log.write(f"\n===== mixed K (pid {os.getpid()})\n")
                r = ag.kernelbench_verdict(kb_eval, ref_src, cand_src, log)
            entry = {"flow": "kb", "correct": r.get("correct"), "ref_ms": r.get("ref_ms"), "new_ms": r.get("new_ms"),
                     "speedup": r.get("speedup"), "ref_stats": r.get("ref_stats"), "new_stats": r.get("new_stats"),
                     "why": r.get("why")}
        else:
            args = h.parse_run_args(harness_argv(opts.ref, opts.cand, ["--no-profiler"]))
            res = h.run_benchmark(args, mode)
            entry = {"flow": "harness", "correct": res.get("correct"), "ref_ms": res.get("kernelbench_ref_ms"),
                     "new_ms": res.get("kernelbench_new_ms"), "speedup": res.get("kernelbench_speedup"),
                     "graph_ref_ms": res.get("graph_ref_ms"), "error": res.get("error")}
        entry.update(t0=t0, seconds=time.time() - t0)
        rec["flows"].append(entry)
        print(f"[mixed] {entry['flow']}: ref {entry['ref_ms']} new {entry['new_ms']}", file=sys.stderr, flush=True)
        with open(opts.record, "w") as f:  # what is done so far survives a crash in the next flow
            json.dump(rec, f, default=str)


# ---------------------------------------------------------------- the driver


def child(opts, argv, record):
    """A new Python process running this file, as agreement.py starts KernelBench's."""
    started = time.time()
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), *argv, "--record", record],
                          capture_output=True, text=True)
    try:
        with open(record) as f:
            r = json.load(f)
        os.remove(record)
    except (OSError, ValueError):
        r = {"failed": True}
    if proc.returncode != 0 or r.get("failed") or r.get("exception"):
        r["stderr_tail"] = proc.stderr[-3000:]
    r["exit"] = proc.returncode
    r["seconds"] = time.time() - started
    return r


def common_child_args(opts):
    return ["--kernelbench", opts.kernelbench, "--kernel-lsp", opts.kernel_lsp, "--ref", opts.ref, "--cand",
            opts.cand, "--log", opts.log, "--harness", opts.harness]


def run_mode(opts, ag, mode, rnd, wrapper):
    ref, cand = opts.ref, opts.cand
    started = time.time()
    rec = {"mode": mode, "round": rnd, "t0": started}
    if mode == "a":
        ns = argparse.Namespace(out=opts.out, kernelbench=opts.kernelbench, kernel_lsp=opts.kernel_lsp)
        r = ag.kernelbench_in_fresh_process(ns, ref, cand, opts.log)
        rec.update(ref_ms=r.get("ref_ms"), new_ms=r.get("new_ms"), speedup=r.get("speedup"),
                   correct=r.get("correct"), detail=r)
    elif mode == "b":
        r = ag.kernel_lsp_verdict(opts.kernel_lsp, ref, cand)
        res = r.pop("result", {}) or {}
        keep = {k: res.get(k) for k in ("kernelbench_ref_ms", "kernelbench_new_ms", "kernelbench_speedup",
                                        "graph_ref_ms", "ref_ms", "new_ms", "speedup", "phase_s", "pid",
                                        "ref_timing", "new_timing", "error", "device")}
        rec.update(ref_ms=res.get("kernelbench_ref_ms"), new_ms=res.get("kernelbench_new_ms"),
                   speedup=res.get("kernelbench_speedup"), correct=r.get("correct"), detail={**r, "result": keep})
    elif mode == "c":
        r = child(opts, ["--probe-one", *common_child_args(opts), "--pattern-new", opts.pattern_new,
                         "--pattern-ref", opts.pattern_ref], os.path.join(opts.out, f".c-{os.getpid()}.json"))
        rec.update(ref_ms=r.get("kernelbench_ref_ms"), new_ms=r.get("kernelbench_new_ms"),
                   speedup=r.get("kernelbench_speedup"), correct=r.get("correct"), detail=r)
    elif mode == "d":
        proc = subprocess.run([opts.kernel_lsp, "bench", cand, "--reference", ref, "--format", "json", "--python",
                               wrapper, "--timeout", "600"], capture_output=True, text=True)
        try:
            res = json.loads(proc.stdout)
        except ValueError:
            res = {"failed": True, "stdout": proc.stdout[-2000:], "stderr": proc.stderr[-2000:]}
        rec.update(ref_ms=res.get("kernelbench_ref_ms"), new_ms=res.get("kernelbench_new_ms"),
                   speedup=res.get("kernelbench_speedup"), correct=res.get("correct"), detail=res)
    elif mode == "f":
        harness = cached_harness(opts.harness)
        proc = subprocess.run([sys.executable, harness, "run", *harness_argv(ref, cand)], capture_output=True,
                              text=True, stdin=subprocess.DEVNULL)
        res = {}
        for line in proc.stdout.splitlines():
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict) and msg.get("type") == "result":
                res = msg
        keep = {k: res.get(k) for k in ("kernelbench_ref_ms", "kernelbench_new_ms", "kernelbench_speedup",
                                        "graph_ref_ms", "ref_ms", "new_ms", "speedup", "phase_s", "pid", "error")}
        keep["harness"], keep["exit"] = harness, proc.returncode
        if not res:
            keep["stderr_tail"] = proc.stderr[-2000:]
        rec.update(ref_ms=res.get("kernelbench_ref_ms"), new_ms=res.get("kernelbench_new_ms"),
                   speedup=res.get("kernelbench_speedup"), correct=res.get("correct"), detail=keep)
    elif mode == "e":
        order = opts.mixed_order if rnd % 2 == 1 else opts.mixed_order.translate(str.maketrans("KH", "HK"))
        r = child(opts, ["--mixed-one", *common_child_args(opts), "--mixed-order", order],
                  os.path.join(opts.out, f".e-{os.getpid()}.json"))
        flows = r.get("flows", [])
        for flow in ("kb", "harness"):
            got = [f for f in flows if f["flow"] == flow and f.get("ref_ms") and f.get("new_ms")]
            if got:
                rec[f"{flow}_ref_ms"] = statistics.mean(f["ref_ms"] for f in got)
                rec[f"{flow}_new_ms"] = statistics.mean(f["new_ms"] for f in got)
        rec.update(correct=all(f.get("correct") for f in flows) if flows else None, detail=r)
    rec["seconds"] = time.time() - started
    return rec


def cached_harness(fallback):
    """The copy of harness.py the binary wrote (same text), else the repository's."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.environ.get("HOME", "/tmp"), ".cache")
    path = os.path.join(base, "kernel-lsp", f"harness-{sha256(fallback)[:16]}.py")
    return path if os.path.isfile(path) else fallback


def fmt(x, spec="{:.3f}"):
    return spec.format(x) if isinstance(x, (int, float)) else "-"


def driver(opts):
    opts.out = os.path.abspath(opts.out)
    os.makedirs(opts.out, exist_ok=True)
    for name in ("kernelbench", "kernel_lsp", "ref", "cand", "harness"):
        setattr(opts, name, os.path.abspath(getattr(opts, name)))
    opts.log = os.path.join(opts.out, "kernelbench_eval.log")
    if opts.pin is not None:
        os.sched_setaffinity(0, {opts.pin})
    ag = load_agreement()
    modes = opts.modes.split(",")
    wrapper = write_wrapper(opts) if "d" in modes else None
    jsonl = os.path.join(opts.out, "bias.jsonl")
    t_start = time.time()
    est = dict(DEFAULT_SECONDS)
    with open(jsonl, "a") as f:
        f.write(json.dumps({"mode": "meta", "t0": t_start, "argv": sys.argv, "proc": proc_info(),
                            "harness_sha256": sha256(opts.harness), "ref": opts.ref, "cand": opts.cand,
                            "pattern_new": opts.pattern_new, "pattern_ref": opts.pattern_ref,
                            "mixed_order": opts.mixed_order}) + "\n")
    print(f"bias probe: {os.path.basename(opts.cand)} vs {os.path.basename(opts.ref)}, modes {modes}, "
          f"rounds {opts.rounds}, budget {opts.budget} s, pinned to {opts.pin}", flush=True)
    stop = False
    for rnd in range(1, opts.rounds + 1):
        k = (rnd - 1) % len(modes)
        order = modes[k:] + modes[:k]
        for pos, mode in enumerate(order):
            left = opts.budget - (time.time() - t_start)
            if left < est[mode]:
                print(f"stopping: {left:.0f} s left, mode {mode} takes about {est[mode]:.0f} s", flush=True)
                stop = True
                break
            rec = run_mode(opts, ag, mode, rnd, wrapper)
            rec["pos"], rec["order"] = pos, order
            est[mode] = max(est[mode] if rnd > 1 else 0, rec["seconds"] * 1.15)
            with open(jsonl, "a") as f:
                f.write(json.dumps(rec, default=str) + "\n")
            line = (f"round {rnd} {mode}: ref {fmt(rec.get('ref_ms'))} new {fmt(rec.get('new_ms'))} "
                    f"speedup {fmt(rec.get('speedup'))} correct {rec.get('correct')} ({rec['seconds']:.0f} s)")
            if mode == "c" and rec["detail"].get("ab"):
                line += " | " + " ".join(f"{b['model']}:{b['impl'][0]}={b['mean']:.3f}"
                                         for b in rec["detail"]["ab"]["blocks"])
            if mode == "e":
                line += " | " + " ".join(f"{x['flow'][0]}:{fmt(x.get('ref_ms'), '{:.2f}')}/{fmt(x.get('new_ms'))}"
                                         for x in rec["detail"].get("flows", []))
            if rec.get("correct") is not True:
                line += f" !! {str(rec.get('detail'))[-400:]}"
            print(line, flush=True)
        if stop:
            break
    print(f"done in {time.time() - t_start:.0f} s", flush=True)


# ---------------------------------------------------------------- summary


def med(xs):
    xs = [x for x in xs if isinstance(x, (int, float))]
    return statistics.median(xs) if xs else None


def spread(xs):
    xs = [x for x in xs if isinstance(x, (int, float))]
    return (min(xs), max(xs)) if xs else (None, None)


def summarize(path):
    recs = [json.loads(line) for line in open(path) if line.strip()]
    runs = [r for r in recs if r.get("mode") in ("a", "b", "c", "d", "e", "f")]
    print(f"# {path}: {len(runs)} processes\n")
    print("## Per-process KernelBench figures (ms; speedup = ref/new)\n")
    print("| mode | round | pos | ref | new | speedup | seconds |")
    print("|---|---|---|---|---|---|---|")
    for r in runs:
        if r["mode"] == "e":
            for x in r["detail"].get("flows", []):
                sp = x["ref_ms"] / x["new_ms"] if x.get("ref_ms") and x.get("new_ms") else None
                print(f"| e:{x['flow']} | {r['round']} | {r['pos']} | {fmt(x.get('ref_ms'), '{:.2f}')} | "
                      f"{fmt(x.get('new_ms'))} | {fmt(sp, '{:.2f}')} | {x.get('seconds', 0):.0f} |")
            continue
        print(f"| {r['mode']} | {r['round']} | {r['pos']} | {fmt(r.get('ref_ms'), '{:.2f}')} | {fmt(r.get('new_ms'))} "
              f"| {fmt(r.get('speedup'), '{:.2f}')} | {r['seconds']:.0f} |")
    print("\n## Medians by mode (min-max)\n")
    print("| mode | n | ref median | ref min-max | new median | new min-max | speedup median | speedup min-max |")
    print("|---|---|---|---|---|---|---|---|")
    rows = {m: [r for r in runs if r["mode"] == m] for m in "abcdf"}
    for m, rs in rows.items():
        if not rs:
            continue
        cols = []
        for key in ("ref_ms", "new_ms", "speedup"):
            xs = [r.get(key) for r in rs]
            lo, hi = spread(xs)
            cols += [fmt(med(xs), "{:.3f}"), f"{fmt(lo, '{:.3f}')}-{fmt(hi, '{:.3f}')}"]
        print(f"| {m} | {len(rs)} | " + " | ".join(cols) + " |")
    cs = [r for r in runs if r["mode"] == "c" and r["detail"].get("ab")]
    if cs:
        print("\n## c: same process, KernelBench's time_execution_with_cuda_event (K) vs the harness's "
              "time_cuda_event (H)\n")
        print("| round | harness figure ref/new | K ref blocks | H ref blocks | K/H ref | K new blocks | H new blocks "
              "| K/H new | K speedup | H speedup |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        ratios = {"ref": [], "new": [], "sp": []}
        for r in cs:
            blocks = r["detail"]["ab"]["blocks"]
            m = {}
            for model in ("ref", "new"):
                for impl in ("kb", "harness"):
                    m[model, impl] = [b["mean"] for b in blocks if b["model"] == model and b["impl"] == impl]
            k_ref, h_ref = statistics.mean(m["ref", "kb"]), statistics.mean(m["ref", "harness"])
            k_new, h_new = statistics.mean(m["new", "kb"]), statistics.mean(m["new", "harness"])
            ratios["ref"].append(k_ref / h_ref)
            ratios["new"].append(k_new / h_new)
            ratios["sp"].append((k_ref / k_new) / (h_ref / h_new))
            print(f"| {r['round']} | {fmt(r.get('ref_ms'), '{:.2f}')}/{fmt(r.get('new_ms'))} | "
                  f"{' '.join(f'{x:.2f}' for x in m['ref', 'kb'])} | {' '.join(f'{x:.2f}' for x in m['ref', 'harness'])} "
                  f"| {k_ref / h_ref:.4f} | {' '.join(f'{x:.3f}' for x in m['new', 'kb'])} | "
                  f"{' '.join(f'{x:.3f}' for x in m['new', 'harness'])} | {k_new / h_new:.4f} | "
                  f"{k_ref / k_new:.2f} | {h_ref / h_new:.2f} |")
        print(f"\nmedian K/H: ref {med(ratios['ref']):.4f}, new {med(ratios['new']):.4f}, speedup "
              f"{med(ratios['sp']):.4f} (over {len(cs)} processes)")
    es = [r for r in runs if r["mode"] == "e"]
    if es:
        print("\n## e: both flows in one process (means over each flow's evaluations)\n")
        print("| round | order | KB flow ref/new | harness flow ref/new | KB/harness ref | KB/harness new | "
              "KB/harness speedup |")
        print("|---|---|---|---|---|---|---|")
        rr, rn, rs = [], [], []
        for r in es:
            if not (r.get("kb_ref_ms") and r.get("harness_ref_ms")):
                continue
            a, b = r["kb_ref_ms"] / r["harness_ref_ms"], r["kb_new_ms"] / r["harness_new_ms"]
            rr.append(a)
            rn.append(b)
            rs.append(a / b)
            print(f"| {r['round']} | {r['detail'].get('order')} | {r['kb_ref_ms']:.2f}/{r['kb_new_ms']:.3f} | "
                  f"{r['harness_ref_ms']:.2f}/{r['harness_new_ms']:.3f} | {a:.4f} | {b:.4f} | {a / b:.4f} |")
        if rr:
            print(f"\nmedian KB/harness: ref {med(rr):.4f}, new {med(rn):.4f}, speedup {med(rs):.4f}")


# ---------------------------------------------------------------- as agreement.py's records


def as_agreement(paths):
    """agreement.py's records (a list of pair records, as agreement.json holds them) from the
    a and b processes of probe runs: per file and round, the round's a process (KernelBench's
    evaluator through agreement.kernelbench_in_fresh_process) is the round's `kernelbench`
    record and its b process (`kernel-lsp bench` through agreement.kernel_lsp_verdict) its
    `kernel_lsp` record; `first` says which of the two ran first. A round that ran only one of
    them (a budget stop) is left out. Rounds are numbered 1.. over the files, in the order given;
    `probe` keeps where each came from: file, the probe's round, its order of modes, and the
    modes that ran between the two."""
    ag = load_agreement()
    by = {}
    for path in paths:
        with open(path) as f:
            recs = [json.loads(line) for line in f if line.strip()]
        metas = [r for r in recs if r.get("mode") == "meta"]
        if len(metas) != 1:
            raise SystemExit(f"{path}: {len(metas)} meta lines; one probe run a file")
        meta = metas[0]
        pair = f"{os.path.basename(meta['cand'])} vs {os.path.basename(meta['ref'])}"
        rounds = {}
        for r in recs:
            if r.get("mode") in ("a", "b"):
                got = rounds.setdefault(r["round"], {})
                if r["mode"] in got:
                    raise SystemExit(f"{path}: round {r['round']} has two {r['mode']} processes")
                got[r["mode"]] = r
        name = os.path.relpath(os.path.abspath(path), REPO)
        if name.startswith(".."):
            name = os.path.basename(path)
        runs = by.setdefault(pair, [])
        for rnd in sorted(rounds):
            got = rounds[rnd]
            if set(got) != {"a", "b"}:
                continue
            a, b = got["a"], got["b"]
            lo, hi = sorted((a["pos"], b["pos"]))
            order = ["kb", "kl"] if a["pos"] < b["pos"] else ["kl", "kb"]
            runs.append({"round": len(runs) + 1, "first": order[0], "kernelbench": a["detail"],
                         "kernel_lsp": b["detail"], "order": order,
                         "probe": {"file": name, "round": rnd, "modes": a["order"],
                                   "between": a["order"][lo + 1:hi]}})
    return [ag.summarize(pair, runs) for pair, runs in by.items() if runs]


# ---------------------------------------------------------------- main


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernelbench", help="KernelBench checkout (src/kernelbench, KernelBench/)")
    p.add_argument("--kernel-lsp", help="the kernel-lsp binary")
    p.add_argument("--ref", help="the reference file (KernelBench task)")
    p.add_argument("--cand", help="the candidate file")
    p.add_argument("--harness", default=HARNESS, help="harness.py to import for modes c and e")
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--modes", default="a,b,c,d,e")
    p.add_argument("--budget", type=float, default=1e9, help="seconds; no new process starts past it")
    p.add_argument("--pin", type=int, help="run everything on this CPU (inherited), as agreement.py --pin")
    p.add_argument("--pattern-new", default="KHHKKHHK", help="mode c: blocks on the candidate, K/H")
    p.add_argument("--pattern-ref", default="KHHK", help="mode c: blocks on the reference, K/H")
    p.add_argument("--mixed-order", default="KHHK", help="mode e: flows in odd rounds (K/H swapped in even ones)")
    p.add_argument("--summarize", metavar="JSONL")
    p.add_argument("--as-agreement", nargs="+", metavar="JSONL",
                   help="print the a/b rounds of these bias.jsonl files as agreement.py's records (JSON)")
    # internal: one child process
    p.add_argument("--probe-one", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--mixed-one", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--record", help=argparse.SUPPRESS)
    p.add_argument("--log", help=argparse.SUPPRESS)
    opts = p.parse_args()
    if opts.summarize:
        return summarize(opts.summarize)
    if opts.as_agreement:
        json.dump(as_agreement(opts.as_agreement), sys.stdout, indent=1, default=str)
        return print()
    missing = [n for n in ("kernelbench", "kernel_lsp", "ref", "cand") if not getattr(opts, n)]
    if missing:
        p.error("needs " + ", ".join("--" + n.replace("_", "-") for n in missing))
    if opts.probe_one:
        return probe_one(opts)
    if opts.mixed_one:
        return mixed_one(opts)
    return driver(opts)


if __name__ == "__main__":
    main()
