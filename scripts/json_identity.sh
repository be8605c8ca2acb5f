#!/usr/bin/env bash
# Byte-identity of `kernel-lsp check --format json` across a refactor.
#
#   scripts/json_identity.sh record   # the current build's outputs -> $OUT_DIR (default /tmp/json-before)
#   scripts/json_identity.sh compare  # the current build's outputs, diffed against them
#
# Inputs: every .py under examples/ and tests/fixtures/, and the generated
# 5,000-line benchmark file (tests/src/lib.rs `generate(5000)`, written by
# check_speed --keep). One JSON output per input file; the exit status and
# stderr are kept too, so a changed error is a difference.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-compare}
BIN=${KERNEL_LSP:-target/debug/kernel-lsp}
BEFORE=${OUT_DIR:-/tmp/json-before}
GEN=${GEN_DIR:-/tmp/json-inputs}

if [ ! -f "$GEN/kernels_5k.py" ]; then
  cargo build -q -p kernel-lsp-tests --bin check_speed
  target/debug/check_speed --kernel-lsp "$BIN" --no-ruff --runs 1 --files 1 --keep "$GEN" >/dev/null
fi

run_all() {
  local out=$1
  rm -rf "$out" && mkdir -p "$out"
  { find examples tests/fixtures -name '*.py' | sort; echo "$GEN/kernels_5k.py"; } | while read -r f; do
    key=$(echo "$f" | tr '/' '_')
    set +e
    "$BIN" check --format json "$f" >"$out/$key.json" 2>"$out/$key.err"
    echo $? >"$out/$key.rc"
    set -e
  done
}

case "$MODE" in
  record) run_all "$BEFORE"; echo "recorded $(ls "$BEFORE" | grep -c '\.json$') outputs in $BEFORE" ;;
  compare)
    AFTER=${AFTER_DIR:-/tmp/json-after}
    run_all "$AFTER"
    if diff -r -q "$BEFORE" "$AFTER"; then
      echo "identical: $(ls "$AFTER" | grep -c '\.json$') outputs"
    else
      echo "DIFFERENT (diff -r $BEFORE $AFTER)"; exit 1
    fi ;;
  *) echo "usage: $0 record|compare" >&2; exit 2 ;;
esac
