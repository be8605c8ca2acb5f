#!/usr/bin/env bash
# The GPU proof behind examples/recurrent/README.md: every recurrent example
# against its KernelBench level-3 task file, through KernelBench's own
# evaluator (eval_kernel_against_ref: seed 42, 5 trials, fp32 tolerance,
# cuda_event timing, excessive-speedup check), the same correctness procedure
# under base seeds 42, 1 and 2 (15 input sets, max abs diff), and the
# reference captured in a CUDA graph. Fetches nothing. From the repository
# root, on a machine with an NVIDIA GPU, torch and triton:
#
#   bash scripts/gpu-proof/recurrent.sh /path/to/KernelBench [examples/recurrent]
#
# One process per task; JSON lines in $OUT/recurrent_kb.jsonl, logs beside
# them, the table last. PERF_TRIALS (default 100) is KernelBench's
# num_perf_trials.
set -u
export PYTHONUNBUFFERED=1
KB=${1:?usage: recurrent.sh KERNELBENCH_CHECKOUT [EXAMPLES_DIR]}
EX=${2:-examples/recurrent}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/gpu-proof}; mkdir -p "$OUT"
[ -f "$KB/src/kernelbench/eval.py" ] || { echo "no src/kernelbench/eval.py under $KB" >&2; exit 2; }
: > "$OUT/recurrent_kb.jsonl"
T0=$(date +%s)
while read -r task example; do
  echo "== [t=$(( $(date +%s) - T0 ))s] $task <- $example"
  timeout 420 python3 "$HERE/recurrent.py" --kb "$KB" --task "$task.py" --example "$EX/$example" \
    --perf-trials "${PERF_TRIALS:-100}" > "$OUT/log_$task.txt" 2>&1
  echo "rc=$?"
  grep '^RESULT ' "$OUT/log_$task.txt" | sed 's/^RESULT //' >> "$OUT/recurrent_kb.jsonl"
done <<'PAIRS'
35_LSTM lstm_wavefront.py
36_LSTMHn lstm_hn_wavefront.py
37_LSTMCn lstm_cn_wavefront.py
38_LSTMBidirectional lstm_bidir_persistent.py
39_GRU gru_wavefront.py
40_GRUHidden gru_hidden_wavefront.py
41_GRUBidirectional gru_bidir_persistent.py
42_GRUBidirectionalHidden gru_bidir_hidden_persistent.py
PAIRS
echo "== [t=$(( $(date +%s) - T0 ))s] done"
python3 "$HERE/recurrent.py" --table "$OUT/recurrent_kb.jsonl" | tee "$OUT/table.txt"
