"""Does `kernel-lsp check --compile` agree with the GPU on LLM-written KernelBench candidates?

compile_agree.py proves the compile verdicts and figures on kernels we generate. This
script takes candidates someone else's LLM wrote (a public collection, passed as
folders; nothing is fetched and nothing of theirs is kept in this repository) beside
KernelBench's level task files, and asks both sides:

1. kernel-lsp: `check --compile --format json` on a copy of every candidate, with a
   `# kernel-lsp: reference = TASK` line appended (lines do not move) so that the
   signatures come from the task's `get_inputs`;
2. the GPU: each candidate imported and its `ModelNew` run once on the task's inputs,
   in a bubblewrap sandbox (no network, no capabilities, read-only file system but its
   own folder: LLM-written code runs nowhere else), one subprocess per candidate with
   a timeout. A Triton CompilationError is placed by the harness's own
   `locate_error` (file line of the kernel's `def` + Triton's relative line).

Verdicts compared per candidate:
- the GPU ran the forward: every kernel it launched compiled, so an error-severity
  KL901 from kernel-lsp is a false compile error (the proof fails on any);
- the GPU hit a compile error at line L: kernel-lsp must report KL901 at L (an
  assumption-dependent KL901 is a warning: counted as found, severity noted);
- the GPU failed at run time for another reason (shapes, a wrong API outside a
  kernel, out of resources...): no compile verdict; an error-severity KL901 there is
  listed for a reason by hand.
Registers, spills and shared memory are compared where both sides compiled a kernel
once (reported, not part of the verdict: signatures may be specialised differently).

Run on a machine with a GPU, torch, triton and bwrap:
    python scripts/gpu-proof/compile_agree_llm.py --kernel-lsp BIN --tasks KernelBench/KernelBench \\
        --out /tmp/agree-llm [--limit 80 --seed 0] COLLECTION_DIR...
"""

import argparse
import concurrent.futures
import json
import os
import random
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "server", "harness")

RUNNER = r'''
import importlib.util, json, os, sys
sys.path.insert(0, sys.argv[3])
import harness

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

cand, task = sys.argv[1], sys.argv[2]
out, module = {}, None
try:
    import torch
    t = load(task, "kb_task")
    module = load(cand, "kb_candidate")
    torch.manual_seed(0)
    model = module.ModelNew(*t.get_init_inputs()).cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in t.get_inputs()]
    with torch.no_grad():
        model(*inputs)
    torch.cuda.synchronize()
    out["verdict"] = "ran"
except BaseException as e:
    f = harness.locate_error(e, os.path.abspath(cand), [module] if module else [])
    out.update(verdict=f.info["kind"], line=f.info["line"], message=f.info["message"][-400:])
kernels = {}
for fn in harness.jit_functions(module) if module else []:
    for entry in list(fn.device_caches.values()):
        for k in entry[0].values():
            kernels.setdefault(fn.__name__, []).append(
                {"n_regs": k.n_regs, "n_spills": k.n_spills, "shared": k.metadata.shared})
out["kernels"] = kernels
print("RESULT " + json.dumps(out))
'''


def select(dirs, tasks, limit, seed):
    """(label, candidate path, task path) for every Triton candidate with a KernelBench task."""
    found = []
    for d in dirs:
        for root, _, files in os.walk(d):
            level = re.search(r"level(\d)", root)
            if not level:
                continue
            for f in sorted(files):
                path = os.path.join(root, f)
                task = os.path.join(tasks, f"level{level.group(1)}", f)
                if not f.endswith(".py") or not os.path.exists(task):
                    continue
                text = open(path, errors="replace").read()
                if "triton.jit" in text and "class ModelNew" in text:
                    model = os.path.basename(os.path.dirname(root))
                    found.append((f"{model}-L{level.group(1)}-{f[:-3]}", path, task))
    random.Random(seed).shuffle(found)
    return sorted(found[:limit] if limit else found)


def kernel_lsp_view(binary, dir_):
    out = subprocess.run([binary, "check", "--compile", "--format", "json", dir_], capture_output=True, text=True)
    doc = json.loads(out.stdout)
    if doc["compile"].get("error"):
        sys.exit(f"check --compile could not compile: {doc['compile']['error']}")
    view = {}
    for d in doc["diagnostics"]:
        label = os.path.splitext(os.path.basename(d["file"]))[0]
        if d["code"] in ("KL901", "KL900"):
            view.setdefault(label, {"errors": []})["errors"].append(
                {"code": d["code"], "severity": d["severity"], "line": d["line"], "message": d["message"][:300]})
    kernels = {}
    for k in doc["compile"]["kernels"]:
        label = os.path.splitext(os.path.basename(k.get("file", "")))[0]
        kernels.setdefault(label, {}).setdefault(k["kernel"], []).append(k)
    return view, kernels, doc["compile"]


def sandboxed(cmd, workdir):
    bwrap = shutil.which("bwrap")
    if not bwrap:
        sys.exit("bwrap not found: LLM-written candidates run only in the sandbox")
    return [bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--cap-drop", "ALL", "--die-with-parent",
            "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--bind", workdir, workdir, "--setenv", "HOME", "/tmp", "--setenv", "TRITON_CACHE_DIR", "/tmp/triton",
            "--chdir", workdir] + cmd


def gpu_one(label, cand, task, workdir, timeout):
    runner = os.path.join(workdir, "runner.py")
    cmd = sandboxed([sys.executable, runner, cand, task, HARNESS], workdir)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return label, {"verdict": "timeout", "kernels": {}}
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return label, json.loads(line[len("RESULT "):])
    return label, {"verdict": "crashed", "message": (p.stderr or "")[-400:], "kernels": {}}


def compare(label, k, kernels, g):
    errors = k.get("errors", [])
    hard = [e for e in errors if e["severity"] == "error"]
    if g["verdict"] == "ran":
        return ("false-error" if hard else "agree"), hard
    if g["verdict"] == "compile-error":
        at = [e for e in errors if e["line"] == g.get("line")]
        if at:
            return "agree", at
        return ("other-line" if errors else "missed"), errors
    return ("runtime-with-error" if hard else "no-compile-verdict"), hard


def figures(kernels, g):
    same = diff = 0
    for name, gpu in g.get("kernels", {}).items():
        ours = kernels.get(name, [])
        if len(gpu) != 1 or len(ours) != 1 or ours[0].get("assumed"):
            continue
        a, b = ours[0], gpu[0]
        # Spills kept in a stack frame are unknown to kernel-lsp (None): registers and shared still count.
        spills = a.get("n_spills") is None or a.get("n_spills") == b["n_spills"]
        if spills and (a.get("n_regs"), a.get("shared")) == (b["n_regs"], b["shared"]):
            same += 1
        else:
            diff += 1
    return same, diff


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kernel-lsp", required=True)
    p.add_argument("--tasks", required=True, help="KernelBench's task folder (level1/, level2/, ...)")
    p.add_argument("--out", default="/tmp/agree-llm")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=8)
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("--no-gpu", action="store_true", help="kernel-lsp's side only")
    p.add_argument("collections", nargs="+")
    args = p.parse_args()
    chosen = select(args.collections, os.path.abspath(args.tasks), args.limit, args.seed)
    cdir = os.path.abspath(os.path.join(args.out, "candidates"))
    os.makedirs(cdir, exist_ok=True)
    for label, path, task in chosen:
        text = open(path, errors="replace").read()
        with open(os.path.join(cdir, label + ".py"), "w") as f:
            f.write(text + ("" if text.endswith("\n") else "\n") + f"# kernel-lsp: reference = {task}\n")
    with open(os.path.join(cdir, "kernel-lsp.toml"), "w") as f:
        f.write(f"python = {json.dumps(sys.executable)}\n")
    view, kernels, summary = kernel_lsp_view(args.kernel_lsp, cdir)
    print(f"Triton {summary['triton']}, target {summary['target']} ({summary['target_from']}); "
          f"{len(chosen)} LLM-written candidates; kernel-lsp compiled {len(summary['kernels'])} kernel configurations")
    if args.no_gpu:
        for label, _, _ in chosen:
            print(label, json.dumps(view.get(label, {})))
        return
    with open(os.path.join(cdir, "runner.py"), "w") as f:
        f.write(RUNNER)
    gpu = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futs = [pool.submit(gpu_one, label, os.path.join(cdir, label + ".py"), task, cdir, args.timeout)
                for label, _, task in chosen]
        for fut in concurrent.futures.as_completed(futs):
            label, result = fut.result()
            gpu[label] = result
    rows, counts = [], {}
    same_figs = diff_figs = 0
    for label, path, task in chosen:
        k, g = view.get(label, {}), gpu[label]
        verdict, evidence = compare(label, k, kernels.get(label, {}), g)
        s, d = figures(kernels.get(label, {}), g)
        same_figs, diff_figs = same_figs + s, diff_figs + d
        counts[verdict] = counts.get(verdict, 0) + 1
        rows.append({"candidate": label, "source": path, "task": task, "kernel_lsp": k, "gpu": g,
                     "verdict": verdict, "evidence": evidence})
    lines = ["", "| candidate | GPU | kernel-lsp KL901 | verdict |", "|---|---|---|---|"]
    for r in rows:
        g = r["gpu"]
        gtxt = g["verdict"] + (f" L{g['line']}" if g.get("line") else "")
        ktxt = ", ".join(f"{e['severity']} L{e['line']}" for e in r["kernel_lsp"].get("errors", [])) or "-"
        lines.append(f"| {r['candidate']} | {gtxt} | {ktxt} | {r['verdict']} |")
    compile_verdicts = sum(counts.get(v, 0) for v in ("agree", "false-error", "other-line", "missed"))
    lines += ["", "counts: " + json.dumps(counts, sort_keys=True),
              f"candidates with a compile verdict on the GPU: {compile_verdicts}; agree: {counts.get('agree', 0)}",
              f"compile errors reported on kernels that compile: {counts.get('false-error', 0)}",
              f"figures (kernels compiled once on both sides, no assumed type): {same_figs} equal, {diff_figs} differ",
              f"PROOF: {'PASS' if not counts.get('false-error') else 'FAIL'}"]
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.out, "compile_agree_llm.json"), "w") as f:
        json.dump({"summary": summary, "rows": rows}, f, indent=1, default=str)
    sys.exit(0 if not counts.get("false-error") else 1)


if __name__ == "__main__":
    main()
