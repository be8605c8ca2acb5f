"""kernel-lsp's Ray driver for `kernel-lsp bench --batch INPUT --ray [ADDRESS]`.

Shipped inside the kernel-lsp binary, written to a cache directory and run
with the user's Python. Each pair is one Ray task asking for one GPU (or one
CPU on the interpreter); Ray schedules and retries them. A task hands its
pair to `kernel-lsp bench --batch-serve` on the host it landed on, over a
Unix socket: the same sandboxed warm worker the per-host pool uses, one per
host and GPU for the run, shared by whichever Ray worker process gets the
next task on that GPU. No candidate code runs in a Ray process.

Input: --jobs FILE, one JSON job per line (the files' text travels with it).
Output: one JSON line per pair on stdout as each finishes, the batch's line.
"""

import argparse
import fcntl
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
import uuid


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


def socket_path(run_id, slot):
    """Where this host's server for `slot` (a GPU, or a Ray worker process on the
    interpreter) listens during run `run_id`; short enough for a socket's name."""
    base = "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()
    return os.path.join(base, f"kernel-lsp-ray-{os.getuid()}", run_id, f"{slot}.sock")


def private_folders(run_dir):
    """Makes the run's folder and the per-user one above it, each this user's
    own and not a link (refused otherwise: another user on the host could
    answer in kernel-lsp's place), and closes them to others."""
    for folder in (os.path.dirname(run_dir), run_dir):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        st = os.lstat(folder)
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            raise RuntimeError(f"{folder} is not a folder of this user's own (a link, or another owner): "
                               f"refusing to use a kernel-lsp server there")
        if st.st_mode & 0o077:
            os.chmod(folder, 0o700)


def _connect(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def connect_server(command, path, env, idle=120, start_secs=60):
    """A connection to the `--batch-serve` server listening at `path`, started
    (under a lock, once per host and slot) when none answers. The server
    outlives the Ray worker that started it, so whichever worker process Ray
    hands the next task on that GPU finds the same warm harness worker."""
    private_folders(os.path.dirname(path))
    sock = _connect(path)
    if sock is not None:
        return sock
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sock = _connect(path)
        if sock is not None:
            return sock
        if os.path.exists(path):
            os.unlink(path)  # a server that died left its socket behind
        with open(path + ".log", "ab") as log:
            proc = subprocess.Popen(command + ["--serve-socket", path, "--serve-idle", str(idle)],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, env=env,
                                    start_new_session=True)
        deadline = time.monotonic() + start_secs
        while time.monotonic() < deadline:
            sock = _connect(path)
            if sock is not None:
                return sock
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    with open(path + ".log", "rb") as f:
        tail = f.read()[-2000:].decode(errors="replace")
    raise RuntimeError(f"kernel-lsp --batch-serve did not start at {path}: {tail.strip()}")


def judge(job, command, run_id, driver_omp=None):
    """One pair through the host's kernel-lsp; an exception makes Ray retry the task."""
    gpus = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    slot = f"gpu-{gpus.replace(',', '_')}" if gpus else f"pid-{os.getpid()}"
    sock = connect_server(command, socket_path(run_id, slot), server_env(os.environ, driver_omp))
    with sock, sock.makefile("rw", encoding="utf-8", newline="\n") as stream:
        stream.write(json.dumps(job) + "\n")
        stream.flush()
        line = stream.readline()
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
    # max_calls=0: a Ray worker process stays for the next task (Ray's default for GPU tasks is 1).
    task = ray.remote(max_calls=0, max_retries=args.retries, retry_exceptions=True, **resources)(judge)
    driver_omp = os.environ.get("OMP_NUM_THREADS")
    run_id = uuid.uuid4().hex[:12]
    pending = {task.remote(job, command, run_id, driver_omp): job for job in jobs}
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
    # This host's servers end when their folder goes; another host's after their idle time.
    shutil.rmtree(os.path.dirname(socket_path(run_id, "x")), ignore_errors=True)


if __name__ == "__main__":
    main()
