# The results table of docs/bench.md, from the committed output of run.sh
# (examples/gru/results/): kernel-lsp bench's figures and the independent
# timing's 10th percentile, per GRU variant. Usage: python3 scripts/gpu-proof/table.py [DIR]
import json, sys
from pathlib import Path

DIR = Path(sys.argv[1] if len(sys.argv) > 1 else "examples/gru/results")
ROWS = [("gru_python_loop", "gru_python_loop.py"), ("gru_nested_1d", "gru_nested_1d.py"),
        ("gru_nested_2d", "gru_nested_1d.py after the KL002 fix"), ("gru_persistent", "gru_persistent.py")]

def p10(xs):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(0.1 * len(xs)))]

indep = {r["file"]: r for r in map(json.loads, (l for l in open(DIR / "indep.jsonl") if l.startswith("{")))}
print("| candidate | bench ref / new ms | bench speedup | independent speedup | apart | correct (max abs diff) | launches / forward |")
print("|---|---|---|---|---|---|---|")
for stem, label in ROWS:
    b = json.load(open(DIR / f"{stem}.json"))
    i = indep[f"{stem}.py"]
    x = p10(i["ref_samples"]) / p10(i["new_samples"])
    ok = "yes" if b["correct"] else "no"
    print(f"| {label} | {b['ref_ms']:.2f} / {b['new_ms']:.2f} | {b['speedup']:.3f}x | {x:.3f}x | "
          f"{100 * (b['speedup'] - x) / x:+.1f}% | {ok} ({b['max_abs_diff']:.1e}) | {b['launches_per_forward']:,} |")
