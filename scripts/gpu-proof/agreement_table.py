"""One table from the agreement.json files of several runs of agreement.py (the pairs
split over device calls, or more rounds of some pairs): the rounds of a pair are pooled
over all files; per pair, both verdicts in every round, each tool's KernelBench
speedups, their medians and ratio, and KernelBench's own spread.

    python agreement_table.py run1.json run2.json ...
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agreement import fmt, summarize, verdict  # the same summary the runs print


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
            "KB median", "kernel-lsp median", "ratio", "KB's own max/min")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    agreed = close = timed = 0
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
        print(f"| {rec['pair']} | {len(runs)} | {v} | {kbs or '-'} | {kls or '-'} | {fmt(rec.get('kernelbench_median'))} | "
              f"{fmt(rec.get('kernel_lsp_median'))} | {fmt(ratio, '{:.3f}')} | "
              f"{fmt(rec.get('kernelbench_spread'), '{:.3f}')} |")
        agreed += rec["agree"]
        if ratio is not None:
            timed += 1
            close += abs(ratio - 1) <= 0.05
    print(f"\nsame verdict in every round: {agreed} of {len(records)} pairs; median KernelBench speedup "
          f"within 5%: {close} of {timed} timed pairs")


if __name__ == "__main__":
    main(sys.argv[1:])
