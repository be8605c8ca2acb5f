#!/usr/bin/env bash
# Issue #38's proof on KernelBench level 1, one device call's worth of stages:
#   two   bench --batch on GPUs 0,1        one   bench --batch on GPU 0
#   one_split  bench --batch on GPU 0 until the budget ends; with RESUME_FROM=its lines, the rest
#   ray   bench --batch --ray (a local Ray cluster started for the run, GPUs 0,1)
#   single  a single `bench` of each pair in $SINGLES (default: the list below), GPUs 0 and 1 in turn
#   kb1, kb2  KernelBench's own evaluation of the same files (kb_eval_generations.py), on GPUs 0,1
# The candidates are written by gen_level1_candidates.py into $W/run (KernelBench's generations
# layout) against KernelBench's own level-1 task files. Each stage is skipped when fewer seconds are
# left before $BUDGET_S than it needs; results are packed into $OUT/results-<tag>.tgz at the end.
#
# Needs (as carried to the device in .gpu38, see docs/bench.md): $G/kernel-lsp, $G/KB (KernelBench's
# repository), $G/bw (bwrap and its libraries, for a machine without bubblewrap), $G/whl
# (wheels: pydantic for KernelBench, jsonschema for Ray), $G/ray_slim.tar.xz (ray 2.60.0 without
# its Java jar and dashboard web build).
#
# What was carried on 2026-11-28 (the device has no network): bwrap from Debian bookworm's
# bubblewrap 0.8.0-2+deb12u1 with libcap2, libselinux1 and libpcre2-8-0 (`apt-get download`, `dpkg -x`,
# bwrap as bw/bwrap.real and the libraries in bw/lib); wheels for cp312 manylinux: pydantic 2.11.7,
# pydantic-core 2.33.2, annotated-types 0.7.0, typing-inspection 0.4.1 (KernelBench's eval.py),
# jsonschema 4.23.0, jsonschema-specifications 2024.10.1, referencing 0.35.1, rpds-py 0.22.3 (Ray);
# ray 2.60.0's cp312 manylinux2014 wheel unpacked without ray/jars and ray/dashboard/client/build,
# as a tar.xz of 30 MB; KernelBench's repository (`git archive`) without levels 2-4, assets,
# notebooks and results; a stripped release build of kernel-lsp.
#
# Usage: G=.gpu38 OUT=... BUDGET_S=540 TAG=call1 bash scripts/gpu-proof/level1_batch.sh two one ray ...
set -uo pipefail
T0=${T0:-$(date +%s)}
ROOT=$PWD
HERE=$(cd "$(dirname "$0")" && pwd)
G=${G:-$ROOT/.gpu38}
G=$(cd "$G" && pwd)
OUT=${OUT:-/tmp/level1-out}
TAG=${TAG:-run}
W=${W:-/tmp/level1}
BUDGET_S=${BUDGET_S:-540}
KLSP=$G/kernel-lsp
TASKS=$G/KB/KernelBench
mkdir -p "$OUT" "$W"
# Multicast stays off on the lent machines (see the device notes).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
left() { echo $(( BUDGET_S - ($(date +%s) - T0) )); }
now() { date +%s.%N; }
log() { echo "[$(( $(date +%s) - T0 )) s] $*"; }


batch() {  # name, CUDA_VISIBLE_DEVICES, extra args...
  local name=$1$SFX gpus=$2; shift 2
  local t0 t1
  # RESUME_FROM=FILE: the lines of an earlier, cut-off run of this stage (a run longer than one device
  # call goes on in the next): the batch judges only the pairs not in it.
  if [ -n "${RESUME_FROM:-}" ]; then
    cp "$RESUME_FROM" "$W/$name.jsonl" && log "$name: resuming after $(wc -l < "$W/$name.jsonl") lines of $RESUME_FROM"
  else
    rm -f "$W/$name.jsonl"
  fi
  t0=$(now)
  # no run reads another's compile cache (the project's .kernel-lsp/compile-cache); the GPU workers'
  # Triton caches live in each sandbox's own fresh folder
  rm -rf "$RUNDIR/.kernel-lsp" "$W/.kernel-lsp"
  CUDA_VISIBLE_DEVICES=$gpus timeout $(( $(left) - 15 )) "$KLSP" bench --batch "$RUNDIR" --tasks "$TASKS" --out "$W/$name.jsonl" \
    --python python3 --timeout 300 --format json "$@" > "$W/$name.summary.json" 2> "$W/$name.err"
  local rc=$?
  t1=$(now)
  echo "$name: CUDA_VISIBLE_DEVICES=$gpus $* exit $rc, wall $(python3 -c "print(round($t1 - $t0, 1))") s, \
$(wc -l < "$W/$name.jsonl") lines" | tee -a "$W/walls.txt"
  tail -3 "$W/$name.err"
  python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print({k: s.get(k) for k in ('pairs','compiled','correct','fast_p','flagged','seconds')})" "$W/$name.summary.json" 2>/dev/null
}

# The single benches (a subset, for the device time): every pair of the three non-matmul tasks, each
# matmul's failing candidate, two cheats and two correct matmuls.
SINGLES=${SINGLES:-"88_sample_0 88_sample_1 88_sample_2 88_sample_3 88_sample_4 88_sample_5 88_sample_6 88_sample_7
12_sample_0 12_sample_1 12_sample_2 12_sample_3 12_sample_4 12_sample_5 12_sample_6 12_sample_7
40_sample_0 40_sample_1 40_sample_2 40_sample_3 40_sample_4 40_sample_5 40_sample_6 40_sample_7
1_sample_3 2_sample_3 8_sample_3 10_sample_3 13_sample_3 14_sample_3 15_sample_3 16_sample_3 17_sample_3 18_sample_3
1_sample_2 2_sample_2 8_sample_0 14_sample_0"}

single_lane() {  # gpu, ids...: one single bench after another on this GPU
  local gpu=$1; shift
  for id in "$@"; do
    [ "$(left)" -lt 40 ] && { echo "single $id: skipped, no time left"; continue; }
    local p=${id%%_sample_*} cand="$W/run/level_1_problem_${id}_kernel.py"
    local ref
    ref=$(ls "$TASKS"/level1/${p}_*.py | head -1)
    local t0; t0=$(now)
    CUDA_VISIBLE_DEVICES=$gpu XDG_CACHE_HOME=$W/cache-single$gpu TRITON_CACHE_DIR=$W/cache-single$gpu/triton \
      timeout $(( $(left) - 20 )) "$KLSP" bench "$cand" --reference "$ref" --python python3 --timeout 300 \
      --format json > "$W/singles/level_1_problem_$id.json" 2> "$W/singles/level_1_problem_$id.err"
    echo "single $id gpu$gpu exit $? $(python3 -c "print(round($(now) - $t0, 1))") s"
  done
}

# Single benches run the candidate in a bwrap sandbox of the script's own (a single `bench` runs it
# unsandboxed): read-only root, the work folder writable, no network.
sandboxed() {
  bwrap --ro-bind / / --dev-bind /dev /dev --proc /proc --tmpfs /tmp --bind "$W" "$W" \
    --ro-bind "$G" "$G" --ro-bind /tmp/site /tmp/site --unshare-net --unshare-pid --die-with-parent \
    --setenv HOME "$W/home" --setenv PATH "$PATH" "$@"
}

# A lane of single benches, run by the script itself inside the sandbox below (exported functions do
# not survive the /bin/sh wrapper of a carried bwrap).
if [ "${1:-}" = "--lane" ]; then
  shift
  single_lane "$@"
  exit 0
fi

# bwrap for the sandbox where the machine has none
if ! command -v bwrap >/dev/null && [ -x "$G/bw/bwrap.real" ]; then
  mkdir -p /tmp/klsp-bin
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s/bwrap.real "$@"\n' "$G/bw" "$G/bw" > /tmp/klsp-bin/bwrap
  chmod +x /tmp/klsp-bin/bwrap
  export PATH=/tmp/klsp-bin:$PATH
fi
# wheels into /tmp/site (KernelBench's pydantic; Ray's jsonschema), Ray itself unpacked there
if [ ! -e /tmp/site/.done ]; then
  mkdir -p /tmp/site
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$G"/whl/*.whl \
    || echo "pip install of the carried wheels failed"
  case " $* " in *" ray "*) tar -xJf "$G/ray_slim.tar.xz" -C /tmp/site || echo "ray unpack failed";; esac
  touch /tmp/site/.done
fi
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
log "setup done; bwrap $(command -v bwrap); $(bwrap --version 2>&1)"
nvidia-smi --query-gpu=index,name,driver_version,memory.used --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'gpus', torch.cuda.device_count())"
nproc

if [ ! -d "$W/run" ]; then
  python3 "$HERE/gen_level1_candidates.py" --tasks "$TASKS/level1" --out "$W/run"
fi
# SUBSET="88_sample_0 ...": the stages run on those pairs alone (copied into $W/sub), and each
# result's name ends in _sub.
RUNDIR=$W/run
SFX=
if [ -n "${SUBSET:-}" ]; then
  RUNDIR=$W/sub
  SFX=_sub
  rm -rf "$RUNDIR" && mkdir -p "$RUNDIR"
  for id in $SUBSET; do cp "$W/run/level_1_problem_${id}_kernel.py" "$RUNDIR/"; done
fi
NPAIRS=$(ls "$RUNDIR"/level_1_problem_*_kernel.py | wc -l)
log "$NPAIRS pairs in $RUNDIR"

for stage in "$@"; do
  case $stage in
    two) [ "$(left)" -gt 60 ] && batch two_gpus 0,1 || log "two: skipped ($(left) s left)";;
    one) need=$(python3 -c "import json; print(int(2.1 * float(json.load(open('$W/two_gpus$SFX.summary.json'))['seconds'])) + 30)" 2>/dev/null || echo 400)
         [ "$(left)" -gt "$need" ] && batch one_gpu 0 || log "one: skipped ($(left) s left, needs $need)";;
    # the one-GPU run split over device calls: runs until the budget ends (part 1), or resumes (RESUME_FROM)
    one_split) [ "$(left)" -gt 60 ] && batch one_gpu 0 || log "one_split: skipped ($(left) s left)";;
    ray) [ "$(left)" -gt 60 ] && batch ray 0,1 --ray || log "ray: skipped ($(left) s left)"
         python3 -c "import ray; print('ray', ray.__version__)" 2>&1 | tail -1
         ls /tmp/ray/session_latest/logs 2>/dev/null | head -30 > "$W/ray_logs_list.txt"
         tail -n 40 /tmp/ray/session_latest/logs/raylet.out > "$W/ray_raylet_tail.txt" 2>/dev/null;;
    single) mkdir -p "$W/singles" "$W/home"
         ids=($SINGLES); a=(); b=()
         for i in "${!ids[@]}"; do if (( i % 2 == 0 )); then a+=("${ids[$i]}"); else b+=("${ids[$i]}"); fi; done
         export W G OUT TAG T0 BUDGET_S
         sandboxed bash "$HERE/level1_batch.sh" --lane 0 "${a[@]}" > "$W/singles_gpu0.log" 2>&1 &
         sandboxed bash "$HERE/level1_batch.sh" --lane 1 "${b[@]}" > "$W/singles_gpu1.log" 2>&1 &
         wait; cat "$W/singles_gpu0.log" "$W/singles_gpu1.log" | tail -50;;
    kb1|kb2) [ "$(left)" -lt 45 ] && { log "$stage: skipped ($(left) s left)"; continue; }
         mkdir -p "$W/home"
         t0=$(now)
         sandboxed env CUDA_VISIBLE_DEVICES=0,1 TRITON_CACHE_DIR=$W/cache-$stage timeout $(( $(left) - 15 )) \
           python3 "$HERE/kb_eval_generations.py" --kb "$G/KB" --run-dir "$RUNDIR" --level 1 --gpus 2 \
           --build-dir "$W/kb-build-$stage" --out "$W/$stage$SFX.json" > "$W/$stage$SFX.log" 2>&1
         echo "$stage: exit $?, wall $(python3 -c "print(round($(now) - $t0, 1))") s" | tee -a "$W/walls.txt"
         tail -4 "$W/$stage$SFX.log";;
    *) log "unknown stage $stage";;
  esac
  log "after $stage: $(left) s left"
done

cp "$W/run/manifest.json" "$W/manifest.json" 2>/dev/null
(cd "$W" && tar -czf "$OUT/results-$TAG.tgz" --exclude='cache-*' --exclude='kb-build-*' --exclude=home --exclude=run \
  ./*.jsonl ./*.json ./*.err ./*.log ./*.txt singles 2>/dev/null)
ls -la "$OUT"
log "done"
