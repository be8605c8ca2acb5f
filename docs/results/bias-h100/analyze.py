"""Pools the bias-probe calls with the earlier agreement rounds (runs 10-12) and tests for a shift.
    python3 docs/results/bias-h100/analyze.py > docs/results/bias-h100/analysis.md
(reads call1/ and call2/ beside it and ../agreement-h100-rounds/run10-12.json; seeded, so the same output)"""
import json, math, random, statistics as st, os
random.seed(1)
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "agreement-h100-rounds")
PAIRS = {"gru_wavefront.py": "39", "gru_hidden_wavefront.py": "40", "lstm_bidir_persistent.py": "38"}

def old():
    """(pair, group, round-id, ref, new, speedup) from agreement runs 10-12."""
    out = []
    for run in ("run10", "run11", "run12"):
        for rec in json.load(open(f"{REPO}/{run}.json")):
            cand = rec["pair"].split()[0]
            if cand not in PAIRS: continue
            for r in rec["runs"]:
                rid = f"{run}-{r['round']}"
                for key in ("kernelbench", "kernelbench_again"):
                    kb = r.get(key)
                    if kb and kb.get("speedup"):
                        out.append((PAIRS[cand], "KB", rid, kb["ref_ms"], kb["new_ms"], kb["speedup"], "old-" + key))
                res = r["kernel_lsp"]["result"]
                out.append((PAIRS[cand], "KL", rid, res["kernelbench_ref_ms"], res["kernelbench_new_ms"],
                            res["kernelbench_speedup"], "old-kernel-lsp"))
    return out

def new():
    out, inproc_c, inproc_e = [], [], []
    for call in ("call1", "call2"):
        for line in open(os.path.join(HERE, call, "bias.jsonl")):
            r = json.loads(line)
            m = r["mode"]
            rid = f"{call}-{r.get('round')}"
            if m in ("a", "d"):
                out.append(("39", "KB", rid, r["ref_ms"], r["new_ms"], r["speedup"], m))
            elif m in ("b",):
                out.append(("39", "KL", rid, r["ref_ms"], r["new_ms"], r["speedup"], m))
            elif m in ("c", "f"):
                out.append(("39", "H", rid, r["ref_ms"], r["new_ms"], r["speedup"], m))
            if m == "c": inproc_c.append(r)
            if m == "e": inproc_e.append(r)
    return out, inproc_c, inproc_e

def med(x): return st.median(x)

def perm_p(x, y, n=20000):
    """two-sided permutation p of the difference of medians of log values"""
    lx, ly = [math.log(v) for v in x], [math.log(v) for v in y]
    obs = abs(med(lx) - med(ly))
    allv = lx + ly
    hits = 0
    for _ in range(n):
        random.shuffle(allv)
        if abs(med(allv[:len(lx)]) - med(allv[len(lx):])) >= obs - 1e-12: hits += 1
    return (hits + 1) / (n + 1)

def boot_ci(x, y, n=20000):
    """95% bootstrap CI of median(x)/median(y)"""
    rs = sorted(med(random.choices(x, k=len(x))) / med(random.choices(y, k=len(y))) for _ in range(n))
    return rs[int(0.025 * n)], rs[int(0.975 * n)]

def cv(x): return st.pstdev(x) / st.mean(x)

def compare(label, rows_x, rows_y, name_x, name_y):
    print(f"\n### {label}: {name_x} (n={len(rows_x)}) vs {name_y} (n={len(rows_y)})\n")
    print(f"| quantity | {name_x} median | {name_y} median | ratio | 95% bootstrap CI | permutation p | CV {name_x} | CV {name_y} |")
    print("|---|---|---|---|---|---|---|---|")
    for i, q in ((3, "ref ms"), (4, "new ms"), (5, "speedup")):
        x, y = [r[i] for r in rows_x], [r[i] for r in rows_y]
        lo, hi = boot_ci(x, y)
        print(f"| {q} | {med(x):.3f} | {med(y):.3f} | {med(x) / med(y):.3f} | {lo:.3f}-{hi:.3f} | {perm_p(x, y):.3f} | {cv(x):.3f} | {cv(y):.3f} |")

def stratified(rows, gx, gy, idx=5, n=20000):
    """pooled over pairs: log values centred on each pair's KB median; permutation within pair"""
    by = {}
    for r in rows:
        if r[1] in (gx, gy): by.setdefault(r[0], []).append(r)
    def stat(assign):
        d = []
        for pair, rs in by.items():
            c = med([math.log(r[idx]) for r in rs if r[1] == gy])
            d += [(math.log(r[idx]) - c, g) for r, g in zip(rs, assign[pair])]
        return med([v for v, g in d if g == gx]) - med([v for v, g in d if g == gy])
    base = {p: [r[1] for r in rs] for p, rs in by.items()}
    obs = stat(base)
    hits = 0
    for _ in range(n // 4):
        perm = {p: random.sample(g, len(g)) for p, g in base.items()}
        if abs(stat(perm)) >= abs(obs) - 1e-12: hits += 1
    return math.exp(obs), (hits + 1) / (n // 4 + 1)

o = old()
nw, cs, es = new()
allrows = o + nw
print("## Cross-process comparisons (KernelBench figure per process)")
for pair in ("39", "40", "38"):
    kb = [r for r in o if r[0] == pair and r[1] == "KB"]
    kl = [r for r in o if r[0] == pair and r[1] == "KL"]
    compare(f"{pair}, agreement runs 10-12 only", kl, kb, "kernel-lsp", "KernelBench")
kb39 = [r for r in allrows if r[0] == "39" and r[1] == "KB"]
kl39 = [r for r in allrows if r[0] == "39" and r[1] == "KL"]
h39 = [r for r in allrows if r[0] == "39" and r[1] == "H"]
compare("39, this probe only (calls 1-2): b vs a", [r for r in nw if r[6] == "b"], [r for r in nw if r[6] == "a"],
        "kernel-lsp (b)", "KernelBench (a)")
compare("39, all data: kernel-lsp (old + b) vs KernelBench fresh processes (old + a + d)", kl39, kb39, "kernel-lsp", "KernelBench")
compare("39, all data: every harness-flow process (old KL, b, c, f) vs every KB-flow process (old KB, a, d)",
        kl39 + h39, kb39, "harness flow", "KB flow")
compare("39, this probe: KB flow started by the binary (d) vs by Python (a)",
        [r for r in nw if r[6] == "d"], [r for r in nw if r[6] == "a"], "d", "a")
compare("39, this probe: harness started by the binary (b) vs by Python (f, c)",
        [r for r in nw if r[6] == "b"], [r for r in nw if r[6] in ("f", "c")], "b", "f+c")
rows_pool = [r for r in allrows if r[1] in ("KB", "KL")]
for idx, q in ((3, "ref"), (4, "new"), (5, "speedup")):
    ratio, p = stratified(rows_pool, "KL", "KB", idx)
    print(f"\npooled over 39/40/38 (old + new), kernel-lsp vs KernelBench, {q}: median log-ratio -> x{ratio:.3f}, stratified permutation p = {p:.3f}")

print("\n## Round-paired kernel-lsp / KernelBench (processes of the same round, minutes apart)\n")
pairs = {}
for r in allrows:
    if r[1] in ("KB", "KL") and r[0] == "39":
        pairs.setdefault(r[2], {"KB": [], "KL": []})[r[1]].append(r[5])
rat = [st.mean(v["KL"]) / st.mean(v["KB"]) for v in pairs.values() if v["KL"] and v["KB"]]
print(f"39: {len(rat)} rounds, ratio median {med(rat):.3f}, range {min(rat):.3f}-{max(rat):.3f}, "
      f"below 1 in {sum(x < 1 for x in rat)} of {len(rat)}")

print("\n## In-process: c (same process, KB's time_execution_with_cuda_event K vs harness time_cuda_event H)\n")
for model in ("ref", "new"):
    per_proc, per_pair, per_pair_med = [], [], []
    for r in cs:
        bl = r["detail"]["ab"]["blocks"]
        k = [b for b in bl if b["model"] == model and b["impl"] == "kb"]
        h = [b for b in bl if b["model"] == model and b["impl"] == "harness"]
        per_proc.append(st.mean(b["mean"] for b in k) / st.mean(b["mean"] for b in h))
        seq = [b for b in bl if b["model"] == model]
        for i in range(0, len(seq), 2):   # KH, HK, KH, ... adjacent blocks
            a_, b_ = seq[i], seq[i + 1]
            kk, hh = (a_, b_) if a_["impl"] == "kb" else (b_, a_)
            per_pair.append(kk["mean"] / hh["mean"])
            per_pair_med.append(kk["median"] / hh["median"])
    print(f"{model}: per process K/H (means) {[round(x, 4) for x in per_proc]} -> mean {st.mean(per_proc):.4f}; "
          f"adjacent block pairs (n={len(per_pair)}): mean-ratio median {med(per_pair):.4f} "
          f"[{min(per_pair):.3f}-{max(per_pair):.3f}], mean {st.mean(per_pair):.4f} +- {st.stdev(per_pair) / math.sqrt(len(per_pair)):.4f} (SE); "
          f"median-ratio median {med(per_pair_med):.4f} [{min(per_pair_med):.3f}-{max(per_pair_med):.3f}]")
print("\nharness figure (its own first blocks) vs the A/B blocks that followed, ref:")
for r in cs:
    bl = [b["mean"] for b in r["detail"]["ab"]["blocks"] if b["model"] == "ref"]
    print(f"  round {r['round']}: figure {r['ref_ms']:.2f}, blocks {[round(x, 2) for x in bl]}")

print("\n## In-process: e (both whole flows in one process)\n")
for q in ("ref_ms", "new_ms"):
    rs = []
    for r in es:
        f = r["detail"]["flows"]
        kb = st.mean(x[q] for x in f if x["flow"] == "kb")
        hh = st.mean(x[q] for x in f if x["flow"] == "harness")
        rs.append(kb / hh)
    print(f"{q}: KB flow / harness flow per process {[round(x, 4) for x in rs]}, mean {st.mean(rs):.4f}")
pos = {}
for r in es:
    for i, x in enumerate(r["detail"]["flows"]):
        pos.setdefault(i, []).append(x["ref_ms"])
print("ref by position in the process (1st..4th evaluation):", {i + 1: round(st.mean(v), 2) for i, v in pos.items()})

print("\n## Process environment: b's harness is not ours; d and c record theirs\n")
for call in ("call1", "call2"):
    with open(os.path.join(HERE, call, "bias.jsonl")) as f:
        records = [json.loads(line) for line in f]
    for r in records:
        if r["mode"] == "d":
            p = r["detail"]["probe_proc"]
            print(f"d ({call}): parent {p['parent_exe']}, affinity {p['affinity']}, nice {p['nice']}, pgrp==pid {p['pgrp'] == p['pid']}, "
                  f"fds {p.get('fd0')},{p.get('fd1')},{p.get('fd2')}, env_count {p['env_count']}, harness sha {r['detail'].get('probe_harness_sha256', '')[:16]}")
            break
    for r in records:
        if r["mode"] in ("c", "e"):
            p = r["detail"]["proc"]
            print(f"{r['mode']} ({call}): parent {p['parent_exe']}, affinity {p['affinity']}, nice {p['nice']}, pgrp==pid {p['pgrp'] == p['pid']}, "
                  f"fds {p.get('fd0')},{p.get('fd1')},{p.get('fd2')}, env_count {p['env_count']}")
            break
    for r in records:
        if r["mode"] == "meta":
            print(f"driver ({call}): harness sha {r['harness_sha256'][:16]}, affinity {r['proc']['affinity']}")

print("\n## Extra: pooled stratified bootstrap CI, noise structure, bursts\n")
def strat_boot(rows, idx=5, n=5000):
    by = {}
    for r in rows:
        by.setdefault(r[0], {"KB": [], "KL": []})[r[1]].append(math.log(r[idx]))
    out = []
    for _ in range(n):
        d = []
        for p, g in by.items():
            kb = random.choices(g["KB"], k=len(g["KB"])); kl = random.choices(g["KL"], k=len(g["KL"]))
            c = med(kb)
            d.append((len(kl), med([x - c for x in kl])))
        out.append(math.exp(sum(w * v for w, v in d) / sum(w for w, _ in d)))
    out.sort()
    return out[int(0.025 * n)], out[int(0.975 * n)]
for idx, q in ((3, "ref"), (4, "new"), (5, "speedup")):
    lo, hi = strat_boot(rows_pool, idx)
    print(f"pooled 39/40/38 kernel-lsp/KernelBench {q}: 95% stratified bootstrap CI of the (weighted) median ratio {lo:.3f}-{hi:.3f}")
# noise structure in e: within-process vs between-process
within = [st.pstdev([x["ref_ms"] for x in r["detail"]["flows"]]) / st.mean([x["ref_ms"] for x in r["detail"]["flows"]]) for r in es]
means = [st.mean([x["ref_ms"] for x in r["detail"]["flows"]]) for r in es]
print(f"e: ref CV within a process (4 evaluations, ~40 s) {[round(x, 3) for x in within]}; CV of the process means {st.pstdev(means) / st.mean(means):.3f}")
inc = [st.pstdev([b['mean'] for b in r['detail']['ab']['blocks'] if b['model'] == 'ref']) / st.mean([b['mean'] for b in r['detail']['ab']['blocks'] if b['model'] == 'ref']) for r in cs]
print(f"c: ref CV across the 4 A/B blocks of a process {[round(x, 3) for x in inc]}")
for impl in ("kb", "harness"):
    n_slow = n_all = 0
    for r in cs:
        for b in r["detail"]["ab"]["blocks"]:
            if b["model"] == "new" and b["impl"] == impl:
                n_slow += sum(t > 3.0 for t in b["trials"]); n_all += len(b["trials"])
    print(f"c: candidate trials over 3 ms, {impl}: {n_slow} of {n_all}")
sp = []
for r in cs:
    bl = r["detail"]["ab"]["blocks"]
    g = lambda m, i, k="mean": st.mean(b[k] for b in bl if b["model"] == m and b["impl"] == i)
    sp.append(((g("ref", "kb") / g("new", "kb")) / (g("ref", "harness") / g("new", "harness")),
               (g("ref", "kb", "median") / g("new", "kb", "median")) / (g("ref", "harness", "median") / g("new", "harness", "median"))))
print(f"c: speedup K/H per process, from block means {[round(a, 4) for a, _ in sp]}, from block medians {[round(b, 4) for _, b in sp]}")
