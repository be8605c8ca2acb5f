"""One table from the agreement.json files of several runs of agreement.py (the pairs
split over device calls, or more rounds of some pairs): the rounds of a pair are pooled
over all files; per pair, both verdicts in every round, each tool's KernelBench
speedups, their medians and ratio, KernelBench's own spread, and a permutation
test of the ratio: how often the rounds, shuffled between the two tools, give
medians at least that far apart (a large value: the two tools' speedups cannot
be told apart from KernelBench's own round-to-round spread).

    python agreement_table.py run1.json run2.json run5.txt ... [--exclude run1.json:lstm_bidir_persistent.py]

A .txt is what agreement.py printed (its "round N ..." lines carry both verdicts and both
speedups, to two decimals): for a run whose agreement.json did not come back. --exclude
FILE:CANDIDATE leaves that candidate's rounds in that file out (rounds that timed other code).
"""

import itertools
import json
import math
import os
import random
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agreement import fmt, summarize, verdict  # the same summary the runs print


def permutation_p(a, b, exact_limit=200_000, trials=20_000):
    """Share of the splits of a + b into groups of len(a) and len(b) whose ratio
    of medians is at least as far from 1 as median(b) / median(a): all splits
    when there are at most `exact_limit`, else `trials` seeded random ones."""
    pool = list(a) + list(b)
    observed = abs(statistics.median(b) / statistics.median(a) - 1)
    far = lambda x, y: abs(statistics.median(y) / statistics.median(x) - 1) >= observed - 1e-12

    def split(chosen):
        ins = set(chosen)
        return [pool[i] for i in chosen], [pool[i] for i in range(len(pool)) if i not in ins]

    if math.comb(len(pool), len(a)) <= exact_limit:
        splits = itertools.combinations(range(len(pool)), len(a))
        hits = total = 0
        for chosen in splits:
            total += 1
            hits += far(*split(chosen))
        return hits / total
    rng = random.Random(0)
    return sum(far(*split(rng.sample(range(len(pool)), len(a)))) for _ in range(trials)) / trials


AGAIN_LINE = re.compile(r"^again round (\d+) (\S+ vs \S+): KB (correct|incorrect|error) (\S+) \((\d+) s\) order (\S+)$")
def self_agreement(kbs, trials=20_000):
    """How often KernelBench agrees with itself within 5%: the share of pairs of
    medians, each of len(kbs) rounds drawn (with replacement, seeded) from
    KernelBench's own rounds, that lie within 5% of each other. What a tool
    whose figures were KernelBench's own would reach, run for as many rounds."""
    rng = random.Random(0)
    n = len(kbs)
    close = 0
    for _ in range(trials):
        a = statistics.median(rng.choice(kbs) for _ in range(n))
        b = statistics.median(rng.choice(kbs) for _ in range(n))
        close += abs(a / b - 1) <= 0.05
    return close / trials


ROUND_LINE = re.compile(r"^round (\d+) (\S+ vs \S+): KB (correct|incorrect|error) (\S+) \((\d+) s\) · "
                        r"kernel-lsp (correct|incorrect|error) (\S+) \((\d+) s\)(.*)$")
VERDICTS = {"correct": True, "incorrect": False, "error": None}


def speedup_of(text):
    return float(text[:-1]) if text.endswith("x") else None


def records_of_text(path):
    """The records of a run from its printed "round" lines."""
    by = {}
    with open(path) as f:
        for line in f:
            m = ROUND_LINE.match(line.rstrip("\n"))
            if m:
                rnd, pair, kb_v, kb_s, kb_t, kl_v, kl_s, kl_t, why = m.groups()
                by.setdefault(pair, []).append({
                    "round": int(rnd), "first": "kb" if int(rnd) % 2 else "kl", "from": os.path.basename(path),
                    "kernelbench": {"correct": VERDICTS[kb_v], "speedup": speedup_of(kb_s), "seconds": int(kb_t)},
                    "kernel_lsp": {"correct": VERDICTS[kl_v], "speedup": speedup_of(kl_s), "seconds": int(kl_t),
                                   "why": why.strip().split(" ")[0] if why.strip() else ""}})
            again = AGAIN_LINE.match(line.rstrip("\n"))
            if again:
                rnd, pair, v, sp, t, order = again.groups()
                for r in by.get(pair, []):
                    if r["round"] == int(rnd) and "kernelbench_again" not in r:
                        r["kernelbench_again"] = {"correct": VERDICTS[v], "speedup": speedup_of(sp), "seconds": int(t)}
                        r["order"] = order.split("-")
                        r["first"] = r["order"][0]
    if not by:
        raise SystemExit(f"{path}: no 'round N A vs B: KB ... · kernel-lsp ...' lines")
    return [{"pair": pair, "runs": runs} for pair, runs in by.items()]


def pooled(paths, exclude=()):
    by = {}
    for p in paths:
        if p.endswith(".txt"):
            recs = records_of_text(p)
        else:
            with open(p) as f:
                recs = json.load(f)
        for rec in recs:
            if (os.path.basename(p), rec["pair"].split(" vs ")[0]) in exclude:
                continue
            by.setdefault(rec["pair"], []).extend(rec["runs"])
    return [summarize(pair, runs) for pair, runs in by.items()]


def main(argv):
    paths, exclude = [], set()
    it = iter(argv)
    for a in it:
        if a == "--exclude":
            f, _, cand = next(it).partition(":")
            exclude.add((f, cand))
        else:
            paths.append(a)
    records = pooled(paths, exclude)
    head = ("pair", "rounds", "verdicts (KB / kernel-lsp, every round)", "KB speedups", "kernel-lsp KB speedups",
            "KB median", "kernel-lsp median", "ratio", "KB's own max/min", "permutation p",
            "KB within 5% of itself (resampled)")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    agreed = close = timed = apart = testable = 0
    expected = 0.0
    for rec in records:
        runs = rec["runs"]
        kb_v = {verdict(r["kernelbench"]["correct"]) for r in runs}
        kl_v = {verdict(r["kernel_lsp"]["correct"]) for r in runs}
        same = "same" if rec["agree"] else "DIFFERENT"
        why = runs[-1]["kernel_lsp"].get("why") or ""
        v = f"{'/'.join(sorted(kb_v))} / {'/'.join(sorted(kl_v))}, {same}" + (f" ({why})" if why else "")
        kbs = " / ".join(fmt(r["kernelbench"].get("speedup")) for r in runs if r["kernelbench"].get("speedup"))
        kls = " / ".join(fmt(r["kernel_lsp"].get("speedup")) for r in runs if r["kernel_lsp"].get("speedup"))
        ratio = rec.get("ratio")
        a = [r["kernelbench"]["speedup"] for r in runs if r["kernelbench"].get("speedup")]
        b = [r["kernel_lsp"]["speedup"] for r in runs if r["kernel_lsp"].get("speedup")]
        p = permutation_p(a, b) if ratio is not None and len(a) > 1 and len(b) > 1 else None
        own = self_agreement(a) if ratio is not None else None
        print(f"| {rec['pair']} | {len(runs)} | {v} | {kbs or '-'} | {kls or '-'} | {fmt(rec.get('kernelbench_median'))} | "
              f"{fmt(rec.get('kernel_lsp_median'))} | {fmt(ratio, '{:.3f}')} | "
              f"{fmt(rec.get('kernelbench_spread'), '{:.3f}')} | {fmt(p, '{:.2f}')} | {fmt(own, '{:.2f}')} |")
        expected += own or 0.0
        agreed += rec["agree"]
        if ratio is not None:
            timed += 1
            close += abs(ratio - 1) <= 0.05
            apart += p is not None and p < 0.05
            # With few rounds no split is rare enough: 3 + 3 rounds give 20 splits, so p >= 0.05 always.
            testable += p is not None and 1 / math.comb(len(a) + len(b), len(a)) < 0.05
    print(f"\nsame verdict in every round: {agreed} of {len(records)} pairs; median KernelBench speedup "
          f"within 5%: {close} of {timed} timed pairs; speedups told apart from KernelBench's own spread "
          f"(permutation p < 0.05): {apart} of the {testable} timed pairs with rounds enough for the test to tell; "
          f"pairs KernelBench itself would bring within 5% of its own median, resampled: {expected:.1f} of {timed}")
    twice = [rec for rec in records if any("kernelbench_again" in r for r in rec["runs"])]
    if twice:
        print()
        self_table(twice)


def self_table(records):
    """KernelBench against itself: rounds of --kb-twice runs, where each round ran its
    evaluator twice (two new processes) and kernel-lsp once, in rotating order."""
    head = ("pair", "rounds", "KB speedups", "KB again", "kernel-lsp", "KB median", "KB again median",
            "kernel-lsp median", "KB again / KB", "kernel-lsp / KB", "kernel-lsp / KB again")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    own = kl_close = timed = 0
    for rec in records:
        runs = [r for r in rec["runs"] if "kernelbench_again" in r]
        cols = [[r[k].get("speedup") for r in runs] for k in ("kernelbench", "kernelbench_again", "kernel_lsp")]
        if not all(x for col in cols for x in col):
            verdicts = {verdict(r[k]["correct"]) for r in runs for k in ("kernelbench", "kernelbench_again")}
            print(f"| {rec['pair']} | {len(runs)} | {'/'.join(sorted(verdicts))} | - | - | - | - | - | - | - | - |")
            continue
        a, b, c = (statistics.median(col) for col in cols)
        timed += 1
        own += abs(b / a - 1) <= 0.05
        kl_close += abs(c / a - 1) <= 0.05 and abs(c / b - 1) <= 0.05
        print(f"| {rec['pair']} | {len(runs)} | " + " | ".join(" / ".join(fmt(x) for x in col) for col in cols)
              + f" | {fmt(a)} | {fmt(b)} | {fmt(c)} | {b / a:.3f} | {c / a:.3f} | {c / b:.3f} |")
    print(f"\nKernelBench's two evaluations within 5% of each other: {own} of {timed} timed pairs; "
          f"kernel-lsp within 5% of both: {kl_close} of {timed}")


if __name__ == "__main__":
    main(sys.argv[1:])
