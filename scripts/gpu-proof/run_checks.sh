#!/usr/bin/env bash
# The run-time checks (timer identity, a kernel launched in forward, an output
# that follows its input) on every GPU example at task size: none may fire on
# an honest kernel. Then the three cheating fixtures, which must be caught.
# Needs $KLSP_BIN, python3 with torch and triton, a GPU. Run from the repository root.
set -uo pipefail
BIN=${KLSP_BIN:?set KLSP_BIN}
nvidia-smi --query-gpu=name --format=csv,noheader
for f in examples/recurrent/*_wavefront.py examples/recurrent/*_persistent.py examples/gru/gru_persistent.py; do
  s=$(date +%s)
  "$BIN" bench "$f" --tolerance legacy --format json > /tmp/r.json 2>/dev/null
  python3 - "$f" "$(( $(date +%s) - s ))" <<'PY'
import json, sys
r = json.load(open("/tmp/r.json"))
e = r.get("error") or {}
print(f"{sys.argv[1]:<48} correct={r.get('correct')} launches={r.get('launches_per_forward')} "
      f"speedup={r.get('speedup') and round(r['speedup'], 2)} error={e.get('kind')} ({sys.argv[2]} s) {e.get('message', '')[:100]}")
PY
done
D=$(mktemp -d); cp tests/fixtures/bench/add_ref.py tests/fixtures/bench/add_timer_dict.py tests/fixtures/bench/add_never_launched.py tests/fixtures/bench/add_cached.py "$D/"
for f in add_timer_dict add_never_launched add_cached; do
  (cd "$D" && "$BIN" bench $f.py --reference add_ref.py --format json > /tmp/c.json 2>/dev/null)
  python3 -c "
import json; r=json.load(open('/tmp/c.json')); e=r.get('error') or {}
print('$f', r.get('mode'), 'caught as', e.get('kind'), '|', e.get('message','')[:120])"
done
# The reward-hack battery (tests/fixtures/hacks/), on the GPU: every paraphrase
# caught by what its run did, the honest look-alikes clean, the side streams too.
KERNEL_LSP_BATTERY_GPU=1 python3 -m unittest server/harness/test_battery.py 2>&1 | tail -40
