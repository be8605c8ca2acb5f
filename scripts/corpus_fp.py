#!/usr/bin/env python3
"""Count kernel-lsp diagnostics over Triton code bases, per code base and rule.

Usage: corpus_fp.py [--bin PATH] [--list] NAME=DIR [NAME=DIR ...]

Fetches nothing: each code base is a directory already on disk. Runs
`kernel-lsp check --format json` on every non-vendor `*.py` file under each
DIR that defines a Triton kernel and prints one table: files, kernels,
findings by rule (KL001-KL011 and KL900), findings at warning level or above,
hints and information apart, and warning-or-above findings per 100 kernels.
`--list` also prints every finding (name file:line code severity message),
for judging them by hand. Vendor back ends (paths with `_ascend`,
`_cambricon`, `backends/`, any `backend/_NAME/` but `_nvidia`, and the like),
tests and benchmarks are skipped: the question is what experts write for
NVIDIA GPUs. The binary is the release
build when there is one, else the debug build.
"""

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

VENDOR_MARKERS = (
    "_ascend", "_cambricon", "backends/", "_mthreads", "_iluvatar", "_kunlun",
    "_metax", "_hygon", "_arm", "_aipu", "_tsingmicro", "_enflame", "_sunrise",
    "vendor", "_amd", "_npu", "/test/", "/tests/", "/benchmark/",
)
CODES = [f"KL{n:03d}" for n in range(1, 12)] + ["KL900"]
# Folders of another vendor's chip, whole path parts (`kernels/amd/`, `tutorials/ascend/`).
VENDOR_DIRS = {"amd", "rocm", "hip", "ascend", "npu", "metax", "mlu", "xpu", "musa", "unittest"}
LOUD = ("error", "warning")


def vendor_backend(rel):
    """A back end for another vendor's chip: `runtime/backend/_thead/...`
    (any `backend/_NAME/` but NVIDIA's)."""
    parts = ("/" + rel).split("/")
    for i, part in enumerate(parts[:-1]):
        if part in ("backend", "backends") and parts[i + 1].startswith("_") and parts[i + 1] != "_nvidia":
            return True
    return False


def kernel_files(root):
    for dirpath, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            parts = rel.split("/")
            other_vendor = any(p.lower() in VENDOR_DIRS for p in parts[:-1]) or any("-amd-" in p.lower() for p in parts)
            if (not name.endswith(".py") or any(m in "/" + rel for m in VENDOR_MARKERS) or vendor_backend(rel)
                    or other_vendor):
                continue
            try:
                text = open(path, encoding="utf-8", errors="replace").read()
            except OSError:
                continue
            if "triton" in text and "jit" in text:
                yield path


def check(binary, path):
    out = subprocess.run(
        [binary, "check", "--format", "json", path],
        capture_output=True, text=True, timeout=600,
    )
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        return None


def default_binary():
    for candidate in ("target/release/kernel-lsp", "target/debug/kernel-lsp"):
        if os.path.exists(candidate):
            return candidate
    sys.exit("no kernel-lsp binary: build it (cargo build --release -p kernel-lsp) or pass --bin")


def measure(binary, name, root, listing):
    files = kernels = 0
    codes, loud, quiet = Counter(), Counter(), Counter()
    paths = list(kernel_files(root))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        reports = list(pool.map(lambda p: check(binary, p), paths))
    for path, report in zip(paths, reports):
        if report is None:
            print(f"{name}: no report for {path}", file=sys.stderr)
            continue
        if not report["kernels"]:
            continue
        files += 1
        kernels += len(report["kernels"])
        for d in report["diagnostics"]:
            if d["code"] not in CODES:
                continue
            codes[d["code"]] += 1
            (loud if d["severity"] in LOUD else quiet)[d["code"]] += 1
            rel = os.path.relpath(path, root)
            listing.append(f"{name} {rel}:{d['line']} {d['code']} {d['severity']} {d['message'][:160]}")
    return name, files, kernels, codes, loud, quiet


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=None, help="kernel-lsp binary (default: target/release, else target/debug)")
    parser.add_argument("--list", action="store_true", help="also print every finding")
    parser.add_argument("repos", nargs="+", metavar="NAME=DIR")
    args = parser.parse_args()
    binary = args.bin or default_binary()
    rows, listing = [], []
    for spec in args.repos:
        if "=" not in spec:
            sys.exit(f"{spec!r}: expected NAME=DIR")
        name, root = spec.split("=", 1)
        if not os.path.isdir(root):
            sys.exit(f"{name}: {root} is not a directory")
        rows.append(measure(binary, name, root, listing))
    if args.list:
        for line in listing:
            print(line)
        print()
    header = ["code base", "files", "kernels", *CODES, "warning+", "hints", "warning+ per 100 kernels"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, files, kernels, codes, loud, quiet in rows:
        cells = [name, str(files), str(kernels)]
        for c in CODES:
            cell = str(loud[c])
            if quiet[c]:
                cell += f" (+{quiet[c]}h)"
            cells.append(cell)
        n_loud, n_quiet = sum(loud.values()), sum(quiet.values())
        per100 = 100.0 * n_loud / kernels if kernels else 0.0
        cells += [str(n_loud), str(n_quiet), f"{per100:.2f}"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
