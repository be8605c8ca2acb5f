#!/usr/bin/env bash
# How far KernelBench's own speedup moves between runs in separate processes,
# next to kernel-lsp's: agreement.py run ROUNDS times on the same pairs, each
# round a new process for KernelBench's evaluator and for `kernel-lsp bench`.
# The spread between KernelBench's own rounds is the floor under any
# "within X%" comparison of two runs. Needs a GPU.
#   scripts/gpu-proof/repeatability.sh KERNELBENCH_CHECKOUT KERNEL_LSP_BINARY OUT_DIR [ROUNDS] [ONLY]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
kb="${1:?usage: repeatability.sh KERNELBENCH_CHECKOUT KERNEL_LSP_BINARY OUT_DIR [ROUNDS] [ONLY]}"
bin="${2:?}"
out="${3:?}"
rounds="${4:-3}"
only="${5:-gru_wavefront.py,lstm_bidir_persistent.py}"
examples="${EXAMPLES:-$here/../../examples/recurrent}"
python="${PYTHON:-python3}"
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  mkdir -p "$out/round$r"
  "$python" "$here/agreement.py" --kernelbench "$kb" --kernel-lsp "$bin" --examples "$examples" \
    --out "$out/round$r" --only "$only" > "$out/round$r/agreement.txt" 2>&1
done
"$python" - "$out" "$rounds" <<'PY'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
by = {}
for r in range(1, rounds + 1):
    for rec in json.load(open(os.path.join(out, f"round{r}", "agreement.json"))):
        kb, kl = rec["kernelbench"], rec["kernel_lsp"].get("result") or {}
        by.setdefault(rec["pair"], []).append((kb.get("speedup"), kb.get("ref_ms"), kb.get("new_ms"),
            kl.get("kernelbench_speedup"), kl.get("kernelbench_ref_ms"), kl.get("kernelbench_new_ms")))
print("| pair | round | KB speedup | KB ref / new ms | kernel-lsp KB speedup | kernel-lsp ref / new ms |")
print("|---|---|---|---|---|---|")
for pair, rows in by.items():
    for i, (s, rm, nm, ks, krm, knm) in enumerate(rows, 1):
        f = lambda x, p="{:.2f}": p.format(x) if isinstance(x, (int, float)) else "-"
        print(f"| {pair} | {i} | {f(s)}x | {f(rm)} / {f(nm, '{:.3f}')} | {f(ks)}x | {f(krm)} / {f(knm, '{:.3f}')} |")
    kbs = [r[0] for r in rows if r[0]]
    kls = [r[3] for r in rows if r[3]]
    if len(kbs) > 1:
        print(f"| {pair} | spread | KB max/min {max(kbs)/min(kbs):.3f} | | kernel-lsp max/min "
              f"{max(kls)/min(kls):.3f} | |")
PY
