#!/usr/bin/env bash
# The GPU proof behind examples/recurrent/README.md: every persistent recurrent kernel against
# cuDNN in one run (recurrent.py: correctness over fresh inputs, determinism, interleaved timing,
# per-step floors), then `kernel-lsp bench` on each file. Run from the repository root on a
# machine with a GPU: `KERNEL_LSP=target/release/kernel-lsp bash scripts/gpu-proof/recurrent.sh`.
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu-proof}; mkdir -p "$OUT"
B=${KERNEL_LSP:-$PWD/.gpu-proof/kernel-lsp}
T0=$(date +%s); el() { echo "== [t=$(( $(date +%s) - T0 ))s] $*"; }
el "recurrent.py"; python3 scripts/gpu-proof/recurrent.py --repeats ${REPEATS:-30} > $OUT/recurrent.jsonl 2> $OUT/recurrent.err; echo "rc=$?"
for f in gru_wavefront gru_hidden_wavefront gru_bidir_persistent gru_bidir_hidden_persistent lstm_wavefront; do
  el "bench $f"; timeout 300 $B bench examples/recurrent/$f.py --python python3 --format json > $OUT/bench_$f.json 2>> $OUT/bench.err; echo "rc=$?"
done
el done
