#!/usr/bin/env python3
"""Compares the runs of issue #38's level-1 proof (level1_batch.sh), from the
folders its results were unpacked into:

- `one_gpu.jsonl`, `two_gpus.jsonl`, `ray.jsonl` (`bench --batch` lines) and
  their `*.summary.json`;
- `singles/level_1_problem_P_sample_S.json` (single `bench --format json`);
- `kb1.json`, `kb2.json` (kb_eval_generations.py: KernelBench's own evaluation).

A kernel-lsp verdict is `(correct, error kind)`; KernelBench's is
`(compiled, correctness)`. Prints the agreement counts, the wall times, the
summary in KernelBench's terms next to KernelBench's own figures, and the
speedup spreads, as Markdown. Usage: level1_compare.py DIR [DIR...] [--md FILE]
"""

import argparse
import json
import math
import os
import statistics
import sys

THRESHOLDS = (0.0, 1.0, 1.5, 2.0)


def load_lines(path):
    if not os.path.exists(path):
        return None
    out = {}
    for line in open(path):
        if line.strip():
            v = json.loads(line)
            out[v["pair"]["id"]] = v
    return out


def verdict(v):
    """kernel-lsp's verdict of one pair: whether the outputs matched, and the error kind."""
    if v is None:
        return None
    return (v.get("correct"), (v.get("error") or {}).get("kind"))


def klsp_speedup(v):
    """KernelBench's statistic as kernel-lsp measured it (the mean of its cuda_event trials)."""
    s = v.get("kernelbench_speedup")
    return s if isinstance(s, (int, float)) and s > 0 and math.isfinite(s) else None


def kb_verdict(r):
    return (bool(r.get("compiled")), bool(r.get("correctness")))


def kb_speedup(r):
    """KernelBench's own: reference mean over candidate mean (its excessive-speedup check's figures)."""
    rt, ref = r.get("runtime"), r.get("ref_runtime")
    if not r.get("correctness") or not isinstance(rt, (int, float)) or not isinstance(ref, (int, float)):
        return None
    if rt <= 0 or ref <= 0:
        return None
    return ref / rt


def fast_p(speedups, correct, n):
    """KernelBench's fast_p over all n pairs: correct and speedup > p (p = 0: correct)."""
    out = {}
    for p in THRESHOLDS:
        if p == 0.0:
            out[p] = sum(1 for c in correct.values() if c) / n if n else 0.0
        else:
            out[p] = sum(1 for k, c in correct.items() if c and (speedups.get(k) or 0) > p) / n if n else 0.0
    return out


def agree(a, b, f=verdict):
    """(equal, compared, the ids that differ) over the pairs both hold."""
    keys = sorted(set(a) & set(b))
    diff = [k for k in keys if f(a[k]) != f(b[k])]
    return len(keys) - len(diff), len(keys), diff


def spread(x, y):
    """Relative difference of two speedups of one pair, |x - y| / min(x, y)."""
    return abs(x - y) / min(x, y)


def klsp_compiled(v):
    """KernelBench's `compiled` as kernel-lsp's summary counts it: the module loaded, or the
    compile stage found a sure Triton error before any GPU (which KernelBench meets after loading)."""
    return "load" in (v.get("phase_s") or {}) or v.get("static_check") == "compile"


def load_dirs(dirs, suffix=""):
    data = {"batch": {}, "summary": {}, "singles": {}, "kb": {}, "walls": [], "manifest": None, "full": {}}
    for d in dirs:
        if suffix:  # the whole batch's runs, to compare the subset's verdicts with
            for name in ("one_gpu", "two_gpus"):
                lines = load_lines(os.path.join(d, name + ".jsonl"))
                if lines:
                    data["full"][name] = lines
        for name in ("one_gpu", "two_gpus", "ray"):
            lines = load_lines(os.path.join(d, name + suffix + ".jsonl"))
            if lines:
                data["batch"][name] = lines
                try:
                    data["summary"][name] = json.load(open(os.path.join(d, name + suffix + ".summary.json")))
                except (OSError, ValueError):
                    pass
        sd = os.path.join(d, "singles")
        if os.path.isdir(sd):
            for f in sorted(os.listdir(sd)):
                if f.endswith(".json"):
                    try:
                        data["singles"][f[:-5]] = json.load(open(os.path.join(sd, f)))
                    except ValueError:
                        data["singles"][f[:-5]] = None  # an empty or cut file: no verdict
        for name in ("kb1", "kb2"):
            p = os.path.join(d, name + suffix + ".json")
            if os.path.exists(p):
                data["kb"][name] = json.load(open(p))
        if os.path.exists(os.path.join(d, "walls.txt")):
            data["walls"] += [line.rstrip() for line in open(os.path.join(d, "walls.txt"))]
        if os.path.exists(os.path.join(d, "manifest.json")):
            data["manifest"] = {m["id"][:-len("_kernel.py")]: m for m in json.load(open(os.path.join(d, "manifest.json")))}
    return data


def report(data, walls=None):
    """The report as Markdown. `walls` ({run: seconds}) replaces a run's summary
    `seconds`: a run split over device calls, whose last summary covers only the
    pairs its own call judged."""
    out = []
    say = out.append
    batch, summary = data["batch"], data["summary"]
    walls = walls or {}
    wall = {name: walls.get(name, s["seconds"]) for name, s in summary.items()}
    say("## bench --batch runs\n")
    say("| run | pairs | wall (summary `seconds`) | pairs/s | compiled | correct | fast_0 | fast_1 | fast_1.5 | fast_2 | flagged |")
    say("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in ("one_gpu", "two_gpus", "ray"):
        s = summary.get(name)
        if not s:
            continue
        fp = s.get("fast_p", {})
        given = " (given)" if name in walls else ""
        say(f"| {name} | {s['pairs']} | {wall[name]:.1f} s{given} | {s['pairs'] / wall[name]:.3f} | {s['compiled']} | "
            f"{s['correct']} | {fp.get('0')} | {fp.get('1')} | {fp.get('1.5')} | {fp.get('2')} | {s.get('flagged')} |")
    if "one_gpu" in summary and "two_gpus" in summary:
        say(f"\nTwo GPUs over one: **{wall['one_gpu'] / wall['two_gpus']:.2f}x**.")
    if "ray" in summary and "two_gpus" in summary:
        r = wall["two_gpus"] / wall["ray"]
        say(f"Ray's throughput over the per-host pool's (same two GPUs): **{r:.3f}** ({(r - 1) * 100:+.1f}%).")
    say("\n## Verdicts (correct, error kind)\n")
    names = [n for n in ("one_gpu", "two_gpus", "ray") if n in batch]
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            eq, n, diff = agree(batch[a], batch[b])
            say(f"- {a} vs {b}: **{eq}/{n}** equal" + (f"; differ: {', '.join(diff)}" if diff else ""))
    for name in names:
        for full, lines in data.get("full", {}).items():
            eq, n, diff = agree(batch[name], lines)
            say(f"- {name} vs the whole batch's {full} run: **{eq}/{n}** equal" + (f"; differ: {', '.join(diff)}" if diff else ""))
    singles = {k: v for k, v in data["singles"].items()}
    for name in names:
        eq, n, diff = agree(batch[name], {k: v for k, v in singles.items() if v is not None})
        say(f"- {name} vs a single `bench` of the pair: **{eq}/{n}** equal" + (f"; differ: {', '.join(diff)}" if diff else ""))
        for k in diff:
            say(f"  - {k}: batch {verdict(batch[name][k])}, single {verdict(singles[k])}")
    missing = [k for k, v in singles.items() if v is None]
    if missing:
        say(f"- singles without a result: {', '.join(missing)}")
    kb = data["kb"]
    if kb and names:
        ref = batch["two_gpus"] if "two_gpus" in batch else batch[names[0]]
        n = len(ref)
        say("\n## KernelBench's own evaluation of the same files\n")
        say("kernel-lsp's `compiled` here counts the compile stage's sure errors as compiled (the rule of "
            "`summary.rs` after this run; the `*.summary.json` of the run used the earlier rule).\n")
        say("| | compiled | correct | fast_0 | fast_1 | fast_1.5 | fast_2 | wall |")
        say("|---|---|---|---|---|---|---|---|")
        for name in names:
            lines = batch[name]
            correct = {k: v.get("correct") is True for k, v in lines.items()}
            fp = fast_p({k: klsp_speedup(v) for k, v in lines.items()}, correct, len(lines))
            comp = sum(1 for v in lines.values() if klsp_compiled(v))
            say(f"| kernel-lsp {name} | {comp} | {sum(correct.values())} | "
                + " | ".join(f"{fp[p]:.4f}" for p in THRESHOLDS) + f" | {summary.get(name, {}).get('seconds')} s |")
        for name, res in sorted(kb.items()):
            pairs = res["pairs"]
            correct = {k: bool(r.get("correctness")) for k, r in pairs.items()}
            fp = fast_p({k: kb_speedup(r) for k, r in pairs.items()}, correct, len(pairs))
            say(f"| KernelBench {name} | {sum(1 for r in pairs.values() if r.get('compiled'))} | {sum(correct.values())} | "
                + " | ".join(f"{fp[p]:.4f}" for p in THRESHOLDS) + f" | {res.get('seconds')} s |")
        for name, res in sorted(kb.items()):
            pairs = res["pairs"]
            keys = sorted(set(pairs) & set(ref))
            same_correct = [k for k in keys if (ref[k].get("correct") is True) == bool(pairs[k].get("correctness"))]
            say(f"- correct/not correct, {names[0] if 'two_gpus' not in batch else 'two_gpus'} vs KernelBench {name}: "
                f"**{len(same_correct)}/{len(keys)}** equal")
            for k in keys:
                if k not in same_correct:
                    meta = pairs[k].get("metadata") or {}
                    why = meta.get("runtime_error_name") or meta.get("compilation_error_name") or meta.get("error") or ""
                    say(f"  - {k}: kernel-lsp {verdict(ref[k])}, KernelBench (compiled, correct) "
                        f"{kb_verdict(pairs[k])} {str(why)[:120]}")
            comp = [k for k in keys if bool(pairs[k].get("compiled")) != klsp_compiled(ref[k])]
            if comp:
                say(f"  - `compiled` differs on {len(comp)}: " + ", ".join(
                    f"{k} (kernel-lsp {verdict(ref[k])}, KernelBench compiled={pairs[k].get('compiled')})" for k in comp))
        if "kb1" in kb and "kb2" in kb:
            a, b = kb["kb1"]["pairs"], kb["kb2"]["pairs"]
            both = [k for k in a if kb_speedup(a[k]) and kb_speedup(b.get(k, {}))]
            sp = sorted(spread(kb_speedup(a[k]), kb_speedup(b[k])) for k in both)
            if sp:
                say(f"\nKernelBench's round-to-round spread of the speedup (|s1 - s2| / min), {len(sp)} correct pairs: "
                    f"median {statistics.median(sp) * 100:.1f}%, max {sp[-1] * 100:.1f}%.")
            say("\n| pair | intent | kernel-lsp | KernelBench 1 | KernelBench 2 | spread KB1-KB2 | kernel-lsp vs nearest KB |")
            say("|---|---|---|---|---|---|---|")
            man = data["manifest"] or {}
            for k in sorted(ref, key=lambda s: [int(x) if x.isdigit() else x for x in s.split("_")]):
                s0, s1, s2 = klsp_speedup(ref[k]), kb_speedup(a.get(k, {})), kb_speedup(b.get(k, {}))
                if not (s0 or s1 or s2):
                    continue
                f = lambda s: f"{s:.3f}" if s else "-"
                sp12 = f"{spread(s1, s2) * 100:.1f}%" if s1 and s2 else "-"
                near = f"{min(spread(s0, s) for s in (s1, s2) if s) * 100:.1f}%" if s0 and (s1 or s2) else "-"
                say(f"| {k} | {man.get(k, {}).get('intent', '')} | {f(s0)} | {f(s1)} | {f(s2)} | {sp12} | {near} |")
    if data["walls"]:
        say("\n## Wall times (outside the tool)\n")
        for w in data["walls"]:
            say(f"- {w}")
    return "\n".join(out) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dirs", nargs="+")
    p.add_argument("--md", help="also write the report to this file")
    p.add_argument("--suffix", default="", help="read NAME+SUFFIX files (level1_batch.sh's SUBSET runs: _sub)")
    p.add_argument("--wall", action="append", default=[], metavar="RUN=SECONDS",
                   help="a run's wall time in place of its summary's (a run split over device calls)")
    args = p.parse_args(argv)
    walls = {}
    for w in args.wall:
        name, _, secs = w.partition("=")
        try:
            walls[name] = float(secs)
        except ValueError:
            p.error(f"--wall {w}: expected RUN=SECONDS")
    text = report(load_dirs(args.dirs, args.suffix), walls)
    sys.stdout.write(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
