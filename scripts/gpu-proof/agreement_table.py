"""One table from the agreement.json files of several runs of agreement.py (the pairs
split over device calls, or more rounds of some pairs): the rounds of a pair are pooled
over all files; per pair, both verdicts in every round, each tool's KernelBench
speedups, their medians and ratio, KernelBench's own spread, and a permutation
test of the ratio: how often the rounds, shuffled between the two tools, give
medians at least that far apart (a large value: the two tools' speedups cannot
be told apart from KernelBench's own round-to-round spread).

    python agreement_table.py run1.json run2.json ...
"""

import itertools
import json
import math
import os
import random
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


def pooled(paths):
    by = {}
    for p in paths:
        with open(p) as f:
            for rec in json.load(f):
                by.setdefault(rec["pair"], []).extend(rec["runs"])
    return [summarize(pair, runs) for pair, runs in by.items()]


def main(paths):
    records = pooled(paths)
    head = ("pair", "rounds", "verdicts (KB / kernel-lsp, every round)", "KB speedups", "kernel-lsp KB speedups",
            "KB median", "kernel-lsp median", "ratio", "KB's own max/min", "permutation p")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    agreed = close = timed = apart = testable = 0
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
        print(f"| {rec['pair']} | {len(runs)} | {v} | {kbs or '-'} | {kls or '-'} | {fmt(rec.get('kernelbench_median'))} | "
              f"{fmt(rec.get('kernel_lsp_median'))} | {fmt(ratio, '{:.3f}')} | "
              f"{fmt(rec.get('kernelbench_spread'), '{:.3f}')} | {fmt(p, '{:.2f}')} |")
        agreed += rec["agree"]
        if ratio is not None:
            timed += 1
            close += abs(ratio - 1) <= 0.05
            apart += p is not None and p < 0.05
            # With few rounds no split is rare enough: 3 + 3 rounds give 20 splits, so p >= 0.05 always.
            testable += p is not None and 1 / math.comb(len(a) + len(b), len(a)) < 0.05
    print(f"\nsame verdict in every round: {agreed} of {len(records)} pairs; median KernelBench speedup "
          f"within 5%: {close} of {timed} timed pairs; speedups told apart from KernelBench's own spread "
          f"(permutation p < 0.05): {apart} of the {testable} timed pairs with rounds enough for the test to tell")


if __name__ == "__main__":
    main(sys.argv[1:])
