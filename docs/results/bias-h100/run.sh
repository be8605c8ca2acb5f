#!/usr/bin/env bash
# Bias probe (scripts/gpu-proof/bias_probe.py) on one pair; usage:
#   run.sh LIMIT_S ROUNDS MODES REF CAND [bias_probe options]
set -u
export PYTHONUNBUFFERED=1
lim=$1; rounds=$2; modes=$3; ref=$4; cand=$5; shift 5
budget=$(( lim - 25 ))
q=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,pstate
{ date -u; nvidia-smi --query-gpu=$q --format=csv; nproc; uname -r;
  python3 -c "import sys,torch,triton; print(sys.executable, torch.__version__, triton.__version__, torch.backends.cudnn.version())"; } > $OUT/gpu.txt 2>&1
timeout $lim python3 scripts/gpu-proof/bias_probe.py --kernelbench .gpu/agree/kb --kernel-lsp .gpu/agree/kernel-lsp \
  --ref "$ref" --cand "$cand" --rounds $rounds --modes $modes --budget $budget --pin 5 --out $OUT "$@" 2>&1 | tee $OUT/driver.log
echo "driver exit ${PIPESTATUS[0]}"
{ date -u; nvidia-smi --query-gpu=$q --format=csv; } >> $OUT/gpu.txt 2>&1
python3 scripts/gpu-proof/bias_probe.py --summarize $OUT/bias.jsonl > $OUT/summary.md 2>&1
sed -n '/## Medians/,$p' $OUT/summary.md
ls -la $OUT
