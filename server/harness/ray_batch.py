"""kernel-lsp's Ray driver for `kernel-lsp bench --batch INPUT --ray [ADDRESS]`.

Shipped inside the kernel-lsp binary, written to a cache directory and run
with the user's Python. Each pair is one Ray task asking for one GPU (or one
CPU on the interpreter); Ray schedules and retries them. A task hands its
pair to `kernel-lsp bench --batch-serve` on the host it landed on: the same
sandboxed warm worker the per-host pool uses, kept alive in the Ray worker
process for the tasks that follow on the same GPU. No candidate code runs in
a Ray process.

Input: --jobs FILE, one JSON job per line (the files' text travels with it).
Output: one JSON line per pair on stdout as each finishes, the batch's line.
"""

import argparse
import json
import os
import subprocess
import sys


def server_env(environ, driver_omp):
    """The environment of the `--batch-serve` process: the Ray worker's, except
    OMP_NUM_THREADS, which Ray forces to 1 in a worker whose task asks for no
    CPU (`num_cpus=0`, the GPU tasks here) and which the sandbox passes on to
    the candidate's run; the run gets the driver's value instead, or none, as
    under the per-host pool. (Measured on the lent 2 x H200: with Ray's 1, the
    harness's determinism step took 2-3x as long as under the pool.)"""
    env = dict(environ)
    if driver_omp is None:
        env.pop("OMP_NUM_THREADS", None)
    else:
        env["OMP_NUM_THREADS"] = driver_omp
    return env


def _server(command, driver_omp=None):
    """The `--batch-serve` process of this Ray worker for the GPU it was given,
    kept on `sys` (a task function is pickled with its globals, `sys` is not)."""
    if not hasattr(sys, "_kernel_lsp_servers"):
        sys._kernel_lsp_servers = {}
    servers = sys._kernel_lsp_servers
    key = (tuple(command), os.environ.get("CUDA_VISIBLE_DEVICES", ""))
    proc = servers.get(key)
    if proc is None or proc.poll() is not None:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                env=server_env(os.environ, driver_omp))
        servers[key] = proc
    return proc


def judge(job, command, driver_omp=None):
    """One pair through the host's kernel-lsp; an exception makes Ray retry the task."""
    proc = _server(command, driver_omp)
    proc.stdin.write(json.dumps(job) + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"kernel-lsp --batch-serve ended without a verdict for {job['id']}")
    answer = json.loads(line)
    answer.setdefault("pair", {})["ray_node"] = os.uname().nodename
    return answer


def failed_line(job, message):
    return {"mode": "none", "correct": None, "speedup": None, "ref_ms": None, "new_ms": None,
            "launches_per_forward": None, "kernels": [], "device": None,
            "error": {"kind": "harness", "message": message, "file": job["candidate"], "line": None,
                      "column": None},
            "pair": {"id": job["id"], "candidate": job["candidate"], "reference": job.get("reference"),
                     "hash": job["hash"], "gpu": None}}


def main():
    p = argparse.ArgumentParser(prog="ray_batch.py")
    p.add_argument("--jobs", required=True)
    p.add_argument("--kernel-lsp", required=True)
    p.add_argument("--address", default=None, help="an existing cluster (ray start --head); none: a local one")
    p.add_argument("--cpu", action="store_true", help="CPU interpreter: tasks ask for one CPU, not a GPU")
    p.add_argument("--cpus", type=int, default=None, help="CPUs of the local cluster started for the run")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--retries", type=int, default=2)
    args = p.parse_args()
    try:
        import ray
    except ImportError as e:
        print(json.dumps({"type": "error", "message": f"cannot import ray ({e}): pip install ray"}), flush=True)
        sys.exit(3)
    jobs = [json.loads(line) for line in open(args.jobs) if line.strip()]
    command = [args.kernel_lsp, "bench", "--batch-serve", "--python", args.python]
    if args.cpu:
        command.append("--cpu")
    init = {"address": args.address, "include_dashboard": False, "log_to_driver": False}
    if args.address is None and args.cpus:
        init["num_cpus"] = args.cpus
    ray.init(**init)
    resources = {"num_cpus": 1, "num_gpus": 0} if args.cpu else {"num_cpus": 0, "num_gpus": 1}
    # max_calls=0: the Ray worker (and its warm kernel-lsp worker) stays for the next task.
    task = ray.remote(max_calls=0, max_retries=args.retries, retry_exceptions=True, **resources)(judge)
    driver_omp = os.environ.get("OMP_NUM_THREADS")
    pending = {task.remote(job, command, driver_omp): job for job in jobs}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            job = pending.pop(ref)
            try:
                line = ray.get(ref)
            except Exception as e:  # the task failed after Ray's retries
                line = failed_line(job, f"the Ray task failed after {args.retries} retries: {e}")
            print(json.dumps(line), flush=True)
    ray.shutdown()


if __name__ == "__main__":
    main()
