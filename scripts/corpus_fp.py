#!/usr/bin/env python3
"""Count kernel-lsp diagnostics over expert Triton code, per repository and rule.

Usage: corpus_fp.py [--bin PATH] NAME=DIR [NAME=DIR ...]

Runs `kernel-lsp check --format json` on every non-vendor `*.py` file under each
DIR that defines a Triton kernel, and prints a table per repository: files,
kernels, diagnostics by code, and diagnostics per 100 kernels. `--list` also
prints every diagnostic (file:line code message), for judging them by hand.
Vendor back ends (paths with `_ascend`, `_cambricon`, `backends/` and the
like) are skipped: the question is what experts write for NVIDIA GPUs.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter

VENDOR_MARKERS = (
    "_ascend", "_cambricon", "backends/", "_mthreads", "_iluvatar", "_kunlun",
    "_metax", "_hygon", "_arm", "_aipu", "_tsingmicro", "_enflame", "_sunrise",
    "vendor", "_amd", "_npu", "/test/", "/tests/", "/benchmark/",
)
CODES = [f"KL{n:03d}" for n in range(1, 11)]


def kernel_files(root):
    for dirpath, _, names in os.walk(root):
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if not name.endswith(".py") or any(m in "/" + rel for m in VENDOR_MARKERS):
                continue
            try:
                text = open(path, encoding="utf-8", errors="replace").read()
            except OSError:
                continue
            if "triton" in text and ("jit" in text):
                yield path


def check(binary, path):
    start = time.monotonic()
    out = subprocess.run(
        [binary, "check", "--format", "json", path],
        capture_output=True, text=True, timeout=600,
    )
    elapsed = time.monotonic() - start
    try:
        report = json.loads(out.stdout)
    except json.JSONDecodeError:
        return None, elapsed
    return report, elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default="target/release/kernel-lsp")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("repos", nargs="+")
    args = parser.parse_args()
    rows = []
    for spec in args.repos:
        name, root = spec.split("=", 1)
        files = kernels = 0
        codes = Counter()
        slowest = (0.0, "")
        for path in kernel_files(root):
            report, elapsed = check(args.bin, path)
            slowest = max(slowest, (elapsed, os.path.relpath(path, root)))
            if report is None:
                print(f"{name}: no report for {path}", file=sys.stderr)
                continue
            if not report["kernels"]:
                continue
            files += 1
            kernels += len(report["kernels"])
            for d in report["diagnostics"]:
                codes[d["code"]] += 1
                if args.list:
                    rel = os.path.relpath(d.get("file", path), root)
                    print(f"{name} {rel}:{d['line']} {d['code']} {d['message'][:140]}")
        rows.append((name, files, kernels, codes, slowest))
    header = ["repo", "files", "kernels", *CODES, "total", "per 100 kernels", "slowest file (s)"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, files, kernels, codes, slowest in rows:
        total = sum(codes.values())
        per100 = 100.0 * total / kernels if kernels else 0.0
        cells = [name, str(files), str(kernels), *(str(codes[c]) for c in CODES),
                 str(total), f"{per100:.1f}", f"{slowest[0]:.2f} {slowest[1]}"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
