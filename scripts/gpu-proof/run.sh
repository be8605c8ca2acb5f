#!/usr/bin/env bash
# The GPU proof behind the README's "Measured on an H100": `kernel-lsp bench` and an independent
# CUDA-event timing (indep.py, no harness code) back to back per GRU variant, both pinned to one
# core; stats.py prints both speedups under several statistics. Run from the repository root on a
# machine with a GPU: `KERNEL_LSP=target/release/kernel-lsp bash scripts/gpu-proof/run.sh`.
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu-proof}; mkdir -p "$OUT"
T0=$(date +%s); el() { echo "== [t=$(( $(date +%s) - T0 ))s] $*"; }
W=/tmp/gru; mkdir -p $W; cp examples/gru/reference.py examples/gru/gru_python_loop.py examples/gru/gru_nested_1d.py examples/gru/gru_persistent.py $W/
B=${KERNEL_LSP:-$PWD/.gpu-proof/kernel-lsp}   # a release build of kernel-lsp, carried to the GPU machine
cp $W/gru_nested_1d.py $W/gru_nested_2d.py; $B check --fix --unsafe-fixes $W/gru_nested_2d.py
printf '[bench]\nwarmup = 5\nrepeats = 60\n' > $W/kernel-lsp.toml
: > $OUT/indep.jsonl
for f in gru_python_loop gru_nested_1d gru_nested_2d gru_persistent; do
  el "bench $f"; taskset -c 3 timeout 100 $B bench $W/$f.py --python python3 --format json > $OUT/$f.json 2>>$OUT/err.txt; echo "rc=$?"
  el "indep $f"; REPEATS=60 taskset -c 3 timeout 100 python3 scripts/gpu-proof/indep.py $W/reference.py $W/$f.py >> $OUT/indep.jsonl 2>>$OUT/err.txt; echo "rc=$?"
done
el "summary"; python3 scripts/gpu-proof/stats.py $OUT/indep.jsonl $OUT/gru_*.json | grep -v samples
tail -3 $OUT/err.txt; el done
