#!/usr/bin/env bash
# Compile verdicts and resources of `kernel-lsp check --compile` (no GPU used) next to launching
# the same kernels on this machine's GPU: verdicts, n_regs, n_spills and metadata.shared.
# Run from the repository root on a machine with a GPU, torch and triton:
#   KERNEL_LSP=target/release/kernel-lsp OUT=/tmp/compile-agree PY=.venv/bin/python bash scripts/gpu-proof/compile_agree.sh
# Prints a table; PROOF: PASS (exit 0) when every verdict and figure agrees.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${KERNEL_LSP:-$PWD/target/release/kernel-lsp}"
out="${OUT:-/tmp/compile-agree}"
py="${PY:-python3}"
mkdir -p "$out"
"$py" -c 'import torch, triton; assert torch.cuda.is_available(), "no GPU"; print("GPU:", torch.cuda.get_device_name(), "triton", triton.__version__)'
"$py" "$here/compile_agree.py" --kernel-lsp "$bin" --out "$out" "$@" 2>&1 | tee "$out/compile_agree.txt"
exit "${PIPESTATUS[0]}"
