#!/usr/bin/env bash
# The forward watch on a GPU, through the harness itself (no kernel-lsp binary
# needed): every honest example at task size must come out without a run-time
# finding, with its share of the reference's work done by PyTorch printed; then
# the reward-hack battery, side streams included. Run from the repository root
# with a python3 that has torch and triton, on a machine with a GPU.
set -uo pipefail
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
for f in examples/recurrent/*_wavefront.py examples/recurrent/*_persistent.py examples/gru/gru_*.py \
         examples/matmul_smem/candidate_*.py examples/conv_scalar/candidate_*.py examples/tanh_activation/candidate_fixed.py \
         examples/host_sync/candidate_*.py examples/softmax_arange/candidate_fixed.py examples/gather_index/candidate_*.py; do
  s=$(date +%s)
  timeout 600 python3 server/harness/harness.py run --candidate "$f" --profile legacy --no-profiler --repeats 5 --warmup 2 \
    2>/dev/null | grep '"type": "result"' | tail -1 > /tmp/w.json
  python3 - "$f" "$(( $(date +%s) - s ))" <<'PY'
import json, sys
try:
    r = json.load(open("/tmp/w.json"))
except ValueError:
    print(f"{sys.argv[1]:<52} no result ({sys.argv[2]} s)"); sys.exit()
e = r.get("error") or {}
w = r.get("watch") or {}
print(f"{sys.argv[1]:<52} correct={r.get('correct')} error={e.get('kind')} torch_share={w.get('torch_share_of_reference_work')} "
      f"ops={w.get('candidate_ops')} ({sys.argv[2]} s) {e.get('message', '')[:90]}")
PY
done
KERNEL_LSP_BATTERY_GPU=1 python3 -m unittest server/harness/test_battery.py 2>&1 | tail -45
