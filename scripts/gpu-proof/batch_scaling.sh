#!/usr/bin/env bash
# bench --batch on one GPU, then on two, over the same 64 pairs built from the
# CI fixtures (tests/fixtures/batch: correct, wrong, cheat, syntax error, 16
# numbered copies each, so that each pair has its own hash); compares every
# verdict with the other run and with a single `bench` of each fixture.
# Usage: KERNEL_LSP=.gpu/kernel-lsp PYTHON=python3 bash scripts/gpu-proof/batch_scaling.sh
set -uo pipefail
KLSP=${KERNEL_LSP:-target/release/kernel-lsp}
PY=${PYTHON:-python3}
FIX=${FIXTURES:-$PWD/tests/fixtures/batch}
W=$(mktemp -d)
cp "$FIX/reference.py" "$W/"
sed -i 's/^N = 1000$/N = 1 << 24/' "$W/reference.py"
touch "$W/kernel-lsp.toml"
for i in $(seq -w 1 16); do
  for f in good wrong cheat syntax; do
    { cat "$FIX/${f}_new.py"; echo "# copy $i"; } > "$W/${f}${i}_new.py"
  done
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$PY" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
run() {  # $1 = CUDA_VISIBLE_DEVICES, $2 = output name
  local t0
  t0=$(date +%s)
  CUDA_VISIBLE_DEVICES=$1 "$KLSP" bench --batch "$W" --out "$W/$2.jsonl" --python "$PY" --timeout 300 --format json > "$W/$2.summary.json"
  echo "$2: CUDA_VISIBLE_DEVICES=$1 $(( $(date +%s) - t0 )) s"
  cat "$W/$2.summary.json"
}
run 0 one_gpu
run 0,1 two_gpus
for f in good wrong cheat syntax; do
  (cd "$W" && CUDA_VISIBLE_DEVICES=0 "$KLSP" bench "${f}01_new.py" --python "$PY" --format json > "$W/single_$f.json")
done
"$PY" - "$W" <<'PY'
import json, os, re, sys
w = sys.argv[1]
def lines(name):
    return {json.loads(l)["pair"]["id"]: json.loads(l) for l in open(os.path.join(w, name + ".jsonl"))}
def verdict(v):
    return (v.get("correct"), (v.get("error") or {}).get("kind"))
one, two = lines("one_gpu"), lines("two_gpus")
single = {f: json.load(open(os.path.join(w, f"single_{f}.json"))) for f in ("good", "wrong", "cheat", "syntax")}
same_runs = sum(verdict(one[k]) == verdict(two[k]) for k in one)
same_single = sum(verdict(two[k]) == verdict(single[re.match(r"([a-z]+)\d+_new\.py", k).group(1)]) for k in two)
print(f"pairs {len(one)} / {len(two)}; one-GPU vs two-GPU verdicts equal: {same_runs}; two-GPU vs single bench: {same_single}")
for f, v in single.items():
    print(f"single bench {f}: {verdict(v)}")
gpus = {}
for v in two.values():
    gpus[v["pair"]["gpu"]] = gpus.get(v["pair"]["gpu"], 0) + 1
print("pairs per GPU in the two-GPU run:", gpus)
s1 = json.load(open(os.path.join(w, "one_gpu.summary.json"))); s2 = json.load(open(os.path.join(w, "two_gpus.summary.json")))
print(f"seconds: one GPU {s1['seconds']}, two GPUs {s2['seconds']}, ratio {s1['seconds'] / s2['seconds']:.2f}x")
PY
