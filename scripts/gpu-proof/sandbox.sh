#!/usr/bin/env bash
# The LLM sandbox on a GPU machine, through the whole rewrite pipeline: the
# hostile probe (tests/fixtures/hostile/probe.py) in a correct persistent GRU
# answer (examples/gru/gru_persistent.py), replayed by editors/vscode/e2e/llm_replay.py on loopback, run by
# `kernel-lsp rewrite` without --cpu (CUDA, Triton's compiler, the ranking's
# timing, all inside bwrap). Then the same kernel benchmarked outside the
# sandbox, to compare the timings.
#
# Needs: $KLSP_BIN (a kernel-lsp binary), bwrap on PATH (or $KLSP_BWRAP_DIR with
# bwrap.real and lib/, as carried to a machine without bubblewrap), python3
# with torch and triton, $OUT for the logs. Run from the repository root.
set -uo pipefail
ROOT=$PWD
BIN=${KLSP_BIN:?set KLSP_BIN to a kernel-lsp binary}
if [ -n "${KLSP_BWRAP_DIR:-}" ]; then
  mkdir -p /tmp/klsp-bin
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s/bwrap.real "$@"\n' "$KLSP_BWRAP_DIR" "$KLSP_BWRAP_DIR" > /tmp/klsp-bin/bwrap
  chmod +x /tmp/klsp-bin/bwrap
  export PATH=/tmp/klsp-bin:$PATH
fi
echo "user $(id -u); bwrap $(command -v bwrap); python $(command -v python3)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"

KEY="gpu-battery-secret-value-never-leaves"
export KLSP_GPU_KEY=$KEY
PROJ=$(mktemp -d /tmp/klsp-gpu-proj-XXXX); CANARY=$(mktemp -d /tmp/klsp-gpu-canary-XXXX)
cp examples/gru/gru_python_loop.py examples/gru/reference.py "$PROJ/"
sleep 600 & VICTIM=$!
python3 - "$ROOT" "$CANARY" "$PROJ" "$VICTIM" <<'PY'
import sys, re
root, canary, proj, victim = sys.argv[1:]
# examples/gru/gru_persistent.py, verified on an H100 at the task's sizes, without its `import os`
# (the gate refuses it; it only asks whether the interpreter is on).
code = open(f"{root}/examples/gru/gru_persistent.py").read().replace("import os\n", "")
code = code.replace('os.environ.get("TRITON_INTERPRET", "0") == "1" or ', "")
open(f"{proj}/gru_persistent_plain.py", "w").write("# kernel-lsp: reference = reference.py\n" + code)
anchor = "import triton.language as tl\n"
for mode in ("yes", "no"):
    probe = open(f"{root}/tests/fixtures/hostile/probe.py").read()
    for k, v in {"ATTACKS": "shell,write,network,key,remount,nsjoin,signals", "RAISE": mode, "CANARY": canary,
                 "PROJECT": proj, "PORT": "9", "VICTIM": victim}.items():
        probe = probe.replace("{" + k + "}", v)
    at = code.index(anchor) + len(anchor)
    open(f"/tmp/klsp-answer-{mode}.md", "w").write(f"```python\n{code[:at]}\n{probe}\n{code[at:]}\n```\n")
PY
for mode in yes no; do
  python3 editors/vscode/e2e/llm_replay.py /tmp/klsp-answer-$mode.md > /tmp/klsp-replay-$mode.url 2>/dev/null &
  echo $! > /tmp/klsp-replay-$mode.pid
done
sleep 2
run() { # mode, repairs
  local url; url=$(head -1 /tmp/klsp-replay-$1.url)
  # The legacy 1e-2 tolerance: this kernel's TF32 dots are 1e-3 off at fp32 (KernelBench's 1e-4 fails it).
  printf '[bench]\ntolerance = "legacy"\n[llm]\nbase-url = "%s"\nmodel = "m"\napi-key-env = "KLSP_GPU_KEY"\n' "$url" > "$PROJ/kernel-lsp.toml"
  (cd "$PROJ" && TMPDIR=/tmp "$BIN" rewrite gru_python_loop.py --action persistent --candidates 1 --repairs 0 \
     --bench-timeout 300 --format json > "$OUT/rewrite-$1.json" 2> "$OUT/rewrite-$1.err"); echo "rewrite ($1) exit $?"
}
s=$(date +%s); run yes; echo "reporting answer: $(( $(date +%s) - s )) s"
s=$(date +%s); run no; echo "silent answer: $(( $(date +%s) - s )) s"
python3 - "$OUT" "$KEY" <<'PY'
import json, sys
out, key = sys.argv[1:]
for mode in ("yes", "no"):
    o = json.load(open(f"{out}/rewrite-{mode}.json"))
    c = o.get("candidates", [{}])[0]
    b = c.get("bench") or {}
    print(f"[{mode}] status={c.get('status')} mode={b.get('mode')} correct={b.get('correct')} speedup={b.get('speedup')} "
          f"vs_current={c.get('speedup_vs_current')} title={o.get('title')!r}")
    for r in o.get("timeline", []):
        print(f"   {r['stage']:<8} {r.get('candidate')} {r['score']:<22} {r['latency_ms']:>7} ms  {r['problem'][:150]}")
    if mode == "yes":
        for line in (c.get("problem") or "").splitlines()[:3]:
            print("   problem:", line[:300])
    text = open(f"{out}/rewrite-{mode}.json").read() + open(f"{out}/rewrite-{mode}.err").read()
    print(f"   key in output: {key in text or key[::-1] in text}")
PY
echo "canary folder: $(ls -A "$CANARY" | wc -l) files; project: $(ls -A "$PROJ" | tr '\n' ' ')"
kill -0 $VICTIM 2>/dev/null && echo "victim alive" || echo "VICTIM KILLED"
echo "temp dirs left: $(ls -d /tmp/kernel-lsp-sandbox-* 2>/dev/null | wc -l)"
grep -rl "$KEY" "$PROJ" 2>/dev/null && echo "KEY FOUND IN PROJECT" || echo "key not in the project"
# The reporting answer's probe saw this inside the sandbox (from its error text):
python3 -c "
import json,sys
o=json.load(open('$OUT/rewrite-yes.json'))
b=(o['candidates'][0].get('bench') or {}).get('error') or {}
print('\n'.join(l[:200] for l in b.get('message','').splitlines() if ':' in l and not l.startswith('loot'))[:4000])
"
# The same verified kernel outside the sandbox: plain `kernel-lsp bench`.
printf '[bench]\ntolerance = "legacy"\n' > "$PROJ/kernel-lsp.toml"
(cd "$PROJ" && "$BIN" bench gru_persistent_plain.py --format json > "$OUT/bench-plain.json" 2> "$OUT/bench-plain.err"); echo "plain bench exit $?"
python3 -c "
import json; r=json.load(open('$OUT/bench-plain.json'))
print('plain (no sandbox): correct', r.get('correct'), 'speedup', r.get('speedup'), 'ref_ms', r.get('ref_ms'), 'new_ms', r.get('new_ms'))"
kill $VICTIM $(cat /tmp/klsp-replay-*.pid) 2>/dev/null
exit 0
