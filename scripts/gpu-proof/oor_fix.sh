#!/usr/bin/env bash
# GPU proof of the KL902 fix: a kernel that fails with Triton's OutOfResources is shrunk by
# `kernel-lsp bench --fix --unsafe-fixes` and then runs correct, with a speedup figure.
#
# Run from the repository root on a machine with a GPU, torch and triton:
#   KERNEL_LSP=target/release/kernel-lsp OUT=/tmp/oor-proof bash scripts/gpu-proof/oor_fix.sh
# Optional: PY (the Python with torch and triton, default python3), STEP_TIMEOUT (seconds per
# step, default 600).
#
# Steps (each echoed with its command and exit code; JSON results under $OUT):
#   1. check:          the static KL006 on the copy (expected: KL006 on the launch).
#   2. bench:          the original (expected: exit 2, error kind out-of-resources, KL902).
#   3. bench --fix:    runs, applies the shrink to the copy, runs again (expected: fix applied,
#                      correct, a speedup).
#   4. bench:          the fixed copy once more on its own (expected: exit 0, correct, speedup).
#   5. verdict:        PROOF: PASS or PROOF: FAIL with the reasons; the script's exit code is 0 or 1.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/oor-proof}
mkdir -p "$OUT"
B=${KERNEL_LSP:-$PWD/target/release/kernel-lsp}
PY=${PY:-python3}
STEP_TIMEOUT=${STEP_TIMEOUT:-600}
T0=$(date +%s)
log() { echo "== [t=$(($(date +%s) - T0))s] $*" | tee -a "$OUT/steps.log"; }
# run NAME CMD...: echoes the command, runs it under the time limit, keeps stdout in $OUT/NAME.out
# and stderr in $OUT/NAME.err, and prints the exit code.
run() {
  local name=$1
  shift
  log "+ $*"
  timeout --kill-after=10 "$STEP_TIMEOUT" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
  local rc=$?
  log "  exit code $rc ($name)$([ $rc -eq 124 ] && echo ": timed out after ${STEP_TIMEOUT}s")"
  return $rc
}

if [ ! -x "$B" ]; then
  log "no kernel-lsp binary at $B: set KERNEL_LSP"
  exit 2
fi
if [ ! -f examples/matmul_smem/candidate_big_blocks.py ]; then
  log "run this from the repository root (examples/matmul_smem/ not found)"
  exit 2
fi
log "kernel-lsp: $B ($("$B" --version 2>&1))"
log "python: $PY ($("$PY" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else "NO GPU")' 2>&1 | tail -1))"

W=$(mktemp -d /tmp/oor-fix.XXXXXX)
cp examples/matmul_smem/candidate_big_blocks.py examples/matmul_smem/reference.py "$W/"
: >"$W/kernel-lsp.toml" # the project root: the bench history stays in the temp dir
cp "$W/candidate_big_blocks.py" "$OUT/candidate_before.py"
log "working copy in $W"

run check "$B" check "$W/candidate_big_blocks.py" --format json
run bench_before "$B" bench "$W/candidate_big_blocks.py" --python "$PY" --format json
cp "$OUT/bench_before.out" "$OUT/bench_before.json"
run bench_fix "$B" bench "$W/candidate_big_blocks.py" --python "$PY" --fix --unsafe-fixes --format json
cp "$OUT/bench_fix.out" "$OUT/bench_fix.json"
cp "$W/candidate_big_blocks.py" "$OUT/candidate_after.py"
log "+ diff -u candidate_before.py candidate_after.py"
diff -u "$OUT/candidate_before.py" "$OUT/candidate_after.py" | tee "$OUT/fix.diff"
run bench_after "$B" bench "$W/candidate_big_blocks.py" --python "$PY"
AFTER_RC=$?
cat "$OUT/bench_after.out"

log "verdict"
"$PY" - "$OUT" "$AFTER_RC" <<'EOF' | tee "$OUT/verdict.txt"
import json, os, sys

out = sys.argv[1]
fails = []

def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except Exception as e:
        fails.append(f"{name}: not one JSON object ({e})")
        return {}

check = load("check.out")
codes = [d.get("code") for d in check.get("diagnostics", [])]
print(f"1. check: {codes}")
if "KL006" not in codes:
    fails.append("check: no KL006 on the original")

before = load("bench_before.json")
err = before.get("error") or {}
print(f"2. bench before: mode={before.get('mode')} device={before.get('device')} error={err.get('kind')}: {err.get('message')}")
if before.get("mode") != "gpu":
    fails.append(f"bench before: mode {before.get('mode')!r}, not gpu")
if err.get("kind") != "out-of-resources":
    fails.append(f"bench before: error kind {err.get('kind')!r}, expected out-of-resources")

fixed = load("bench_fix.json")
fix = fixed.get("fix") or {}
print(f"3. bench --fix: applied={fix.get('applied')} title={fix.get('title')!r} changes={fix.get('changes')} reason={fix.get('reason')!r}")
print(f"   after the fix: correct={fixed.get('correct')} speedup={fixed.get('speedup')} new_ms={fixed.get('new_ms')} ref_ms={fixed.get('ref_ms')} error={fixed.get('error')}")
if fix.get("applied") is not True:
    fails.append(f"bench --fix: the fix was not applied ({fix.get('reason')})")
if ((fix.get("before") or {}).get("error") or {}).get("kind") != "out-of-resources":
    fails.append("bench --fix: its first run did not fail with out-of-resources")
if fixed.get("correct") is not True or fixed.get("error") is not None:
    fails.append("bench --fix: the fixed candidate is not correct")
if fixed.get("speedup") is None:
    fails.append("bench --fix: no speedup figure")
for k in fixed.get("kernels", []):
    print(f"   kernel {k.get('name')}: smem {k.get('shared')} B, regs {k.get('registers')}, spills {k.get('spills')}, warps {k.get('num_warps')}")

after_rc = sys.argv[2]
print(f"4. bench of the fixed file alone: exit code {after_rc} (0: ran and correct)")
if after_rc != "0":
    fails.append(f"bench after: exit code {after_rc}, expected 0")

print("PROOF: PASS" if not fails else "PROOF: FAIL")
for f in fails:
    print(f"  - {f}")
sys.exit(0 if not fails else 1)
EOF
rc=${PIPESTATUS[0]}
log "verdict exit code $rc"
log "results in $OUT: steps.log verdict.txt fix.diff check.out bench_before.json bench_fix.json bench_after.out *.err"
exit "$rc"
