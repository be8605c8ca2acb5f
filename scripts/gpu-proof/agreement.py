"""Does `kernel-lsp bench` say what KernelBench's own evaluator says?

For each (reference, candidate) pair, runs KernelBench main's
`eval_kernel_against_ref` (backend "triton", fp32, 5 correctness trials,
cuda_event timing with 100 trials) and then `kernel-lsp bench --format json`
on the same two files, back to back, and prints one row per pair: both
verdicts, KernelBench's speedup, kernel-lsp's KernelBench-method speedup, and
their ratio. With `--rounds N` every pair is evaluated N times by each tool,
each evaluation in a new process, alternating which tool goes first, and the
speedups are compared as medians; `--pin CPU` runs everything on one core, so
the launch-bound references see the same host in both tools. With `--kb-twice`
each round also runs KernelBench's evaluator a second time, in its own new
process (records: `kernelbench_again`), the three evaluations in rotating
order: how close KernelBench comes to itself, back to back, is the floor for
how close any other tool can come to it.

    python agreement.py --kernelbench /path/to/KernelBench --kernel-lsp /path/to/kernel-lsp \
        [--examples examples/recurrent] [--out DIR] [--rounds N] [--pin CPU] [--only a.py,b.py] [--kb-twice]

Pairs: every candidate in examples/recurrent/ against the KernelBench level-3
task it targets, and the borderline candidates in borderline/ against
borderline/reference.py, and a GPU-bound matrix product (borderline/matmul_*.py). Needs a GPU, torch and numpy. KernelBench's package
imports a few modules its evaluator never calls (an LLM client, dotenv,
pydantic's BaseModel for a result record); where one is not installed, a
minimal stand-in is put in its place and the script says which.
"""

import argparse
import copy
import importlib
import io
import json
import os
import subprocess
import sys
import time
import types
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))

# candidate in examples/recurrent -> KernelBench level-3 task it targets
RECURRENT_TASKS = {
    "lstm_wavefront.py": "35_LSTM.py",
    "lstm_hn_wavefront.py": "36_LSTMHn.py",
    "lstm_cn_wavefront.py": "37_LSTMCn.py",
    "lstm_bidir_persistent.py": "38_LSTMBidirectional.py",
    "gru_wavefront.py": "39_GRU.py",
    "gru_hidden_wavefront.py": "40_GRUHidden.py",
    "gru_bidir_persistent.py": "41_GRUBidirectional.py",
    "gru_bidir_hidden_persistent.py": "42_GRUBidirectionalHidden.py",
}
BORDERLINE = ["relu_exact.py", "relu_offset.py", "relu_sibling.py", "relu_tuple.py", "relu_nan.py"]
# (reference, candidate) in borderline/ with a reference of its own: a GPU-bound pair, whose time
# does not follow the host's launch speed, to tell the method's agreement from the host's noise
OWN_REFERENCE = [("matmul_reference.py", "matmul_ieee.py")]


class _Anything:
    """Stands in for any attribute of a module that is not installed."""

    def __init__(self, *a, **kw):
        pass

    def __call__(self, *a, **kw):
        return None

    def __getattr__(self, name):
        return _Anything()


class _BaseModel:
    """Enough of pydantic.BaseModel for KernelExecResult: fields with defaults, keyword init."""

    def __init__(self, **values):
        for name in getattr(type(self), "__annotations__", {}):
            setattr(self, name, copy.deepcopy(getattr(type(self), name, None)))
        for name, value in values.items():
            setattr(self, name, value)


def _missing_attribute(attr):
    if attr.startswith("__"):
        raise AttributeError(attr)
    return _Anything()


def import_kernelbench(root):
    import torch  # noqa: F401  (before any stand-in exists)

    stood_in = []
    for name in ("requests", "pydantic", "dotenv", "tqdm", "openai", "litellm"):
        try:
            importlib.import_module(name)
        except ImportError:
            module = types.ModuleType(name)
            module.__getattr__ = _missing_attribute
            if name == "pydantic":
                module.BaseModel = _BaseModel
            sys.modules[name] = module
            stood_in.append(name)
    sys.path.insert(0, os.path.join(root, "src"))
    from kernelbench import eval as kb_eval

    return kb_eval, stood_in


def kernelbench_verdict(kb_eval, ref_src, cand_src, log):
    import torch

    buf = io.StringIO()
    started = time.time()
    try:
        with redirect_stdout(buf), redirect_stderr(buf):
            r = kb_eval.eval_kernel_against_ref(
                ref_src, cand_src, seed_num=42, num_correct_trials=5, num_perf_trials=100,
                measure_performance=True, timing_method="cuda_event", verbose=False,
                backend="triton", precision=torch.float32, check_for_excessive_speedup=True)
    except Exception as e:  # KernelBench lets some errors through (e.g. the reference's forward)
        log.write(buf.getvalue())
        return {"correct": False, "why": f"raised {type(e).__name__}: {e}", "seconds": time.time() - started}
    log.write(buf.getvalue())
    if r is None:
        return {"correct": None, "why": "no result (lock-file retry)", "seconds": time.time() - started}
    out = {"correct": bool(r.correctness), "compiled": bool(r.compiled), "seconds": time.time() - started}
    meta = {k: str(v)[:200] for k, v in r.metadata.items()}
    out["metadata"] = meta
    for key, stats in (("ref_stats", r.ref_runtime_stats), ("new_stats", r.runtime_stats)):
        if stats:
            out[key] = {k: v for k, v in stats.items() if isinstance(v, (int, float))}
    if r.correctness and r.runtime > 0 and r.ref_runtime > 0:
        out["speedup"] = r.ref_runtime / r.runtime
        out["ref_ms"], out["new_ms"] = r.ref_runtime, r.runtime
    out["why"] = meta.get("compilation_error_name") or meta.get("runtime_error_name") or meta.get(
        "correctness_issue") or ""
    return out


def kernel_lsp_verdict(binary, ref, cand):
    started = time.time()
    proc = subprocess.run(
        [binary, "bench", cand, "--reference", ref, "--format", "json", "--python", sys.executable,
         "--timeout", "600"], capture_output=True, text=True)
    try:
        r = json.loads(proc.stdout)
    except ValueError:
        return {"correct": None, "why": f"no JSON (exit {proc.returncode}): {proc.stderr[-300:]}",
                "seconds": time.time() - started}
    err = r.get("error") or {}
    return {"correct": r.get("correct") is True, "speedup": r.get("kernelbench_speedup"),
            "interleaved": r.get("speedup"), "graph_speedup": r.get("graph_speedup"),
            "excessive": r.get("excessive_speedup", False), "max_abs_diff": r.get("max_abs_diff"),
            "why": err.get("kind", ""), "message": err.get("message", ""), "seconds": time.time() - started,
            "result": r}


def pairs(kb_root, examples):
    level3 = os.path.join(kb_root, "KernelBench", "level3")
    out = []
    for cand in sorted(os.listdir(examples)):
        if cand in RECURRENT_TASKS:
            out.append((os.path.join(level3, RECURRENT_TASKS[cand]), os.path.join(examples, cand)))
    border = os.path.join(HERE, "borderline")
    out += [(os.path.join(border, "reference.py"), os.path.join(border, c)) for c in BORDERLINE]
    out += [(os.path.join(border, r), os.path.join(border, c)) for r, c in OWN_REFERENCE]
    return out


def verdict(c):
    return {True: "correct", False: "incorrect", None: "error"}[c]


def fmt(x, spec="{:.2f}x"):
    return spec.format(x) if isinstance(x, (int, float)) else "-"


def kernelbench_in_fresh_process(args, ref, cand, log_path):
    """KernelBench's evaluator in a new Python process, as `kernel-lsp bench` runs its harness in
    one: neither inherits the other's (or an earlier pair's) allocator, compiled kernels or
    warmed-up host state."""
    started = time.time()
    out = os.path.join(args.out, f".kb-{os.getpid()}.json")
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--kernelbench", args.kernelbench,
                           "--kernel-lsp", args.kernel_lsp, "--kb-one", ref, cand, out, log_path],
                          capture_output=True, text=True)
    try:
        with open(out) as f:
            r = json.load(f)
        os.remove(out)
        return r
    except (OSError, ValueError):
        return {"correct": None, "why": f"KernelBench's process gave no record (exit {proc.returncode}): "
                f"{proc.stderr[-300:]}", "seconds": time.time() - started}


def kb_one(args):
    """--kb-one REF CAND OUT LOG: one KernelBench evaluation, its record written to OUT."""
    ref, cand, out, log_path = args.kb_one
    kb_eval, _ = import_kernelbench(os.path.abspath(args.kernelbench))
    with open(ref) as f:
        ref_src = f.read()
    with open(cand) as f:
        cand_src = f.read()
    with open(log_path, "a") as log:
        log.write(f"\n===== {os.path.basename(cand)} vs {os.path.basename(ref)}\n")
        r = kernelbench_verdict(kb_eval, ref_src, cand_src, log)
    with open(out, "w") as f:
        json.dump(r, f, default=str)


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def save_records(out, records):
    """agreement.json, replaced whole (written beside it, then renamed)."""
    path = os.path.join(out, "agreement.json")
    with open(path + ".part", "w") as f:
        json.dump(records, f, indent=1, default=str)
    os.replace(path + ".part", path)


def summarize(pair, runs):
    """One pair's record over its rounds: the same verdict in every round, each tool's median
    KernelBench speedup (when every round has one), their ratio, KernelBench's own max/min."""
    kbs = [r["kernelbench"].get("speedup") for r in runs if r["kernelbench"].get("speedup")]
    kls = [r["kernel_lsp"].get("speedup") for r in runs if r["kernel_lsp"].get("speedup")]
    kb_med = median(kbs) if kbs and len(kbs) == len(runs) else None
    kl_med = median(kls) if kls and len(kls) == len(runs) else None
    return {"pair": pair, "runs": runs,
            "agree": all(r["kernelbench"]["correct"] is not None
                         and r["kernelbench"]["correct"] == r["kernel_lsp"]["correct"] for r in runs),
            "kernelbench_median": kb_med, "kernel_lsp_median": kl_med,
            "ratio": kl_med / kb_med if kb_med and kl_med else None,
            "kernelbench_spread": max(kbs) / min(kbs) if len(kbs) > 1 else None,
            # the last round's records, in the shape one-round runs had
            "kernelbench": runs[-1]["kernelbench"], "kernel_lsp": runs[-1]["kernel_lsp"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kernelbench", required=True, help="KernelBench checkout (has src/kernelbench, KernelBench/)")
    p.add_argument("--kernel-lsp", required=True, help="the kernel-lsp binary")
    p.add_argument("--examples", default=os.path.join(HERE, "..", "..", "examples", "recurrent"))
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--only", help="comma-separated candidate names")
    p.add_argument("--rounds", type=int, default=1,
                   help="evaluate every pair this many times with each tool, alternating which goes first; "
                        "speedups are compared as medians over the rounds")
    p.add_argument("--pin", type=int, help="run both tools on this one CPU core (sched_setaffinity, inherited "
                                           "by every process they start)")
    p.add_argument("--kb-twice", action="store_true",
                   help="per round, KernelBench's evaluator twice (two new processes) besides kernel-lsp, the "
                        "three in rotating order: how far KernelBench's own back-to-back figures lie apart")
    p.add_argument("--kb-one", nargs=4, metavar=("REF", "CAND", "OUT", "LOG"), help=argparse.SUPPRESS)
    args = p.parse_args()
    args.kernelbench, args.kernel_lsp = os.path.abspath(args.kernelbench), os.path.abspath(args.kernel_lsp)
    if args.kb_one:
        return kb_one(args)
    if args.pin is not None:
        os.sched_setaffinity(0, {args.pin})
    import torch

    _, stood_in = import_kernelbench(args.kernelbench)
    print(f"device: {torch.cuda.get_device_name()} · torch {torch.__version__} · rounds {args.rounds} · "
          f"pinned to CPU {args.pin if args.pin is not None else '-'}", flush=True)
    if stood_in:
        print(f"stand-ins for modules KernelBench imports but its evaluator does not use: {', '.join(stood_in)}")
    log_path = os.path.join(args.out, "kernelbench_eval.log")
    open(log_path, "w").close()
    todo = []
    for ref, cand in pairs(args.kernelbench, os.path.abspath(args.examples)):
        if args.only and os.path.basename(cand) not in args.only.split(","):
            continue
        todo.append((f"{os.path.basename(cand)} vs {os.path.basename(ref)}", ref, cand))
    runs = {name: [] for name, _, _ in todo}
    for rnd in range(args.rounds):
        for name, ref, cand in todo:
            # alternate which tool goes first, so a drift over time favours neither; with
            # --kb-twice the three evaluations rotate, so each takes each place once in three rounds
            if args.kb_twice:
                order = [("kb", "kb2", "kl"), ("kl", "kb", "kb2"), ("kb2", "kl", "kb")][rnd % 3]
            else:
                order = ("kb", "kl") if rnd % 2 == 0 else ("kl", "kb")
            got = {}
            for tool in order:
                got[tool] = (kernel_lsp_verdict(args.kernel_lsp, ref, cand) if tool == "kl"
                             else kernelbench_in_fresh_process(args, ref, cand, log_path))
            kb, kl = got["kb"], got["kl"]
            record = {"round": rnd + 1, "first": order[0], "kernelbench": kb, "kernel_lsp": kl}
            if "kb2" in got:
                record["order"], record["kernelbench_again"] = list(order), got["kb2"]
            runs[name].append(record)
            print(f"round {rnd + 1} {name}: KB {verdict(kb['correct'])} {fmt(kb.get('speedup'))} "
                  f"({kb['seconds']:.0f} s) · kernel-lsp {verdict(kl['correct'])} {fmt(kl.get('speedup'))} "
                  f"({kl['seconds']:.0f} s) {kl['why']} {kb.get('why', '')}", flush=True)
            if "kb2" in got:
                kb2 = got["kb2"]
                print(f"again round {rnd + 1} {name}: KB {verdict(kb2['correct'])} {fmt(kb2.get('speedup'))} "
                      f"({kb2['seconds']:.0f} s) order {'-'.join(order)}", flush=True)
            # after every pair: a run cut short (a device call's time limit) keeps what it measured
            save_records(args.out, [summarize(n, runs[n]) for n, _, _ in todo if runs[n]])
    records, rows = [], []
    for name, _, _ in todo:
        rec = summarize(name, runs[name])
        records.append(rec)
        rs, kb_med, kl_med = rec["runs"], rec["kernelbench_median"], rec["kernel_lsp_median"]
        ratio, spread, agree, last = rec["ratio"], rec["kernelbench_spread"], rec["agree"], rec["runs"][-1]
        kbs = [r["kernelbench"].get("speedup") for r in rs if r["kernelbench"].get("speedup")]
        kls = [r["kernel_lsp"].get("speedup") for r in rs if r["kernel_lsp"].get("speedup")]
        why = last["kernel_lsp"]["why"] or last["kernelbench"].get("why") or ""
        rows.append((name, verdict(last["kernelbench"]["correct"]), verdict(last["kernel_lsp"]["correct"]),
                     " / ".join(fmt(x) for x in kbs) or "-", " / ".join(fmt(x) for x in kls) or "-",
                     fmt(kb_med), fmt(kl_med), fmt(ratio, "{:.3f}"), fmt(spread, "{:.3f}"),
                     "yes" if agree else "NO", why[:24]))
    save_records(args.out, records)
    head = ("pair", "KB verdict", "kernel-lsp verdict", "KB speedups", "kernel-lsp KB speedups", "KB median",
            "kernel-lsp median", "ratio", "KB max/min", "same verdict every round", "why")
    print("\n| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    agreed = sum(r["agree"] for r in records)
    within = [r for r in records if r["ratio"] is not None]
    close = sum(abs(r["ratio"] - 1) <= 0.05 for r in within)
    print(f"\nsame verdict: {agreed} of {len(records)} pairs (every round); median KernelBench speedup within "
          f"5%: {close} of {len(within)} timed pairs")


if __name__ == "__main__":
    main()
