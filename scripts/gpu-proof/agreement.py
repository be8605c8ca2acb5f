"""Does `kernel-lsp bench` say what KernelBench's own evaluator says?

For each (reference, candidate) pair, runs KernelBench main's
`eval_kernel_against_ref` (backend "triton", fp32, 5 correctness trials,
cuda_event timing with 100 trials) and then `kernel-lsp bench --format json`
on the same two files, back to back, and prints one row per pair: both
verdicts, KernelBench's speedup, kernel-lsp's KernelBench-method speedup, and
their ratio.

    python agreement.py --kernelbench /path/to/KernelBench --kernel-lsp /path/to/kernel-lsp \
        [--examples examples/recurrent] [--out DIR]

Pairs: every candidate in examples/recurrent/ against the KernelBench level-3
task it targets, and the borderline candidates in borderline/ against
borderline/reference.py. Needs a GPU, torch and numpy. KernelBench's package
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
    return out


def verdict(c):
    return {True: "correct", False: "incorrect", None: "error"}[c]


def fmt(x, spec="{:.2f}x"):
    return spec.format(x) if isinstance(x, (int, float)) else "-"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kernelbench", required=True, help="KernelBench checkout (has src/kernelbench, KernelBench/)")
    p.add_argument("--kernel-lsp", required=True, help="the kernel-lsp binary")
    p.add_argument("--examples", default=os.path.join(HERE, "..", "..", "examples", "recurrent"))
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--only", help="comma-separated candidate names")
    args = p.parse_args()
    import torch

    kb_eval, stood_in = import_kernelbench(os.path.abspath(args.kernelbench))
    print(f"device: {torch.cuda.get_device_name()} · torch {torch.__version__}", flush=True)
    if stood_in:
        print(f"stand-ins for modules KernelBench imports but its evaluator does not use: {', '.join(stood_in)}")
    rows, records = [], []
    log = open(os.path.join(args.out, "kernelbench_eval.log"), "w")
    for ref, cand in pairs(os.path.abspath(args.kernelbench), os.path.abspath(args.examples)):
        name = f"{os.path.basename(cand)} vs {os.path.basename(ref)}"
        if args.only and os.path.basename(cand) not in args.only.split(","):
            continue
        log.write(f"\n===== {name}\n")
        with open(ref) as f:
            ref_src = f.read()
        with open(cand) as f:
            cand_src = f.read()
        kb = kernelbench_verdict(kb_eval, ref_src, cand_src, log)
        torch.cuda.empty_cache()
        kl = kernel_lsp_verdict(args.kernel_lsp, ref, cand)
        log.flush()
        ratio = kl["speedup"] / kb["speedup"] if kl.get("speedup") and kb.get("speedup") else None
        agree = kb["correct"] is not None and (kb["correct"] == kl["correct"])
        rows.append((name, verdict(kb["correct"]), verdict(kl["correct"]), fmt(kb.get("speedup")),
                     fmt(kl.get("speedup")), fmt(ratio, "{:.3f}"), "yes" if agree else "NO",
                     (kl["why"] or kb.get("why") or "")[:24]))
        records.append({"pair": name, "kernelbench": kb, "kernel_lsp": kl, "ratio": ratio, "agree": agree})
        print(f"{name}: KB {verdict(kb['correct'])} {fmt(kb.get('speedup'))} ({kb['seconds']:.0f} s) · "
              f"kernel-lsp {verdict(kl['correct'])} {fmt(kl.get('speedup'))} ({kl['seconds']:.0f} s) "
              f"{kl['why']} {kb.get('why', '')}", flush=True)
    with open(os.path.join(args.out, "agreement.json"), "w") as f:
        json.dump(records, f, indent=1, default=str)
    head = ("pair", "KB verdict", "kernel-lsp verdict", "KB speedup", "kernel-lsp KB speedup", "ratio", "agree",
            "why")
    print("\n| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    agreed = sum(r["agree"] for r in records)
    within = [r for r in records if r["ratio"] is not None]
    close = sum(abs(r["ratio"] - 1) <= 0.05 for r in within)
    print(f"\nsame verdict: {agreed} of {len(records)} pairs; KernelBench speedup within 5%: {close} of "
          f"{len(within)} timed pairs")


if __name__ == "__main__":
    main()
