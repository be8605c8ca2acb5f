#!/usr/bin/env bash
# Verdicts and KernelBench speedups of `kernel-lsp bench` next to KernelBench's own
# evaluator, on the same (reference, candidate) pairs, back to back. Needs a GPU.
#   scripts/gpu-proof/agreement.sh KERNELBENCH_CHECKOUT KERNEL_LSP_BINARY [OUT_DIR] [agreement.py options]
# e.g. `... out/ --rounds 3 --pin 5`: each tool three times per pair, in new processes, on CPU 5.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
kb="${1:?usage: agreement.sh KERNELBENCH_CHECKOUT KERNEL_LSP_BINARY [OUT_DIR]}"
bin="${2:?usage: agreement.sh KERNELBENCH_CHECKOUT KERNEL_LSP_BINARY [OUT_DIR]}"
out="${3:-${OUT:-.}}"
shift $(( $# < 3 ? $# : 3 ))
examples="${EXAMPLES:-$here/../../examples/recurrent}"
python="${PYTHON:-python3}"
mkdir -p "$out"
"$python" "$here/agreement.py" --kernelbench "$kb" --kernel-lsp "$bin" --examples "$examples" --out "$out" "$@" \
  2>&1 | tee "$out/agreement.txt"
