#!/usr/bin/env python3
"""KernelBench's own evaluation of a generations folder, for the comparison of
issue #38, where its `scripts/eval_from_generations.py` cannot run as a whole.

What runs is KernelBench's code: its script's `evaluate_single_sample` (which
reads the task and the `level_L_problem_P_sample_S_kernel.py` file and calls
`kernelbench.eval.eval_kernel_against_ref`) with the script's own `EvalConfig`
defaults: 5 correctness trials, 100 performance trials, `cuda_event` timing,
fp32, and the reference timed after the candidate (its excessive-speedup
check, on by default), which gives `ref_runtime`. Only `backend = "triton"`,
`dataset_src = "local"` and the level are set, as on its command line.

What differs from `python scripts/eval_from_generations.py ...`:
- Its imports that local evaluation never calls (`modal`, `litellm`, `openai`,
  `dotenv`, and `pydra`'s command-line parsing) are stubbed when they are not
  installed: the GPU machine has no network to install them.
- One process per GPU evaluates its pairs one after another (KernelBench's
  `batch_eval` starts a fresh pool of processes for every group of as many
  pairs as GPUs); the device time of the session does not allow that start-up
  per pair. A pair past `--timeout` is recorded as KernelBench records one
  ("Evaluation timed out") and its process replaced.

Writes `--out` as `{"pairs": {id: result}, "seconds": s, ...}`, each result
KernelBench's `KernelExecResult` (compiled, correctness, runtime,
ref_runtime in microseconds, metadata as text).
"""

import argparse
import json
import multiprocessing as mp
import os
import re
import sys
import tempfile
import threading
import time

STUBS = {
    "modal": "MagicMock-backed: Modal is KernelBench's cloud mode, never called in local evaluation",
    "litellm": "LLM client: not called by evaluation",
    "openai": "LLM client: not called by evaluation",
    "dotenv": "reads .env for API keys: not needed by evaluation",
}
GENERIC_STUB = '''"""Stub for KernelBench's unused import ({why}); written by kb_eval_generations.py."""
from unittest.mock import MagicMock as _MagicMock
_mock = _MagicMock(name={name!r})
def __getattr__(attr):
    return getattr(_mock, attr)
'''
PYDRA_STUB = '''"""Stub for pydra (KernelBench's config class and CLI parser); written by kb_eval_generations.py."""
REQUIRED = "REQUIRED"
class Config:
    def to_dict(self):
        return dict(vars(self))
def main(base=None):
    return lambda f: f
'''

NAME = re.compile(r"level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$")


def write_stubs(folder):
    """Stubs for the modules KernelBench imports but local evaluation never uses,
    only where the module is not installed."""
    import importlib.util

    made = []
    for name, why in list(STUBS.items()) + [("pydra", "config")]:
        if importlib.util.find_spec(name) is not None:
            continue
        text = PYDRA_STUB if name == "pydra" else GENERIC_STUB.format(why=why, name=name)
        with open(os.path.join(folder, name + ".py"), "w") as f:
            f.write(text)
        made.append(name)
    return made


def setup_paths(kb, stubs):
    for p in (stubs, os.path.join(kb, "scripts"), os.path.join(kb, "src")):
        if p not in sys.path:
            sys.path.insert(0, p)
    os.environ["PYTHONPATH"] = os.pathsep.join([stubs, os.path.join(kb, "scripts"), os.path.join(kb, "src")]
                                               + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))


def make_config(efg, args):
    config = efg.EvalConfig()
    config.run_name = os.path.basename(os.path.abspath(args.run_dir))
    config.runs_dir = os.path.dirname(os.path.abspath(args.run_dir))
    config.dataset_src = "local"
    config.level = args.level
    config.backend = "triton"
    config.num_gpu_devices = args.gpus
    config.timeout = args.timeout
    config.kernel_eval_build_dir = args.build_dir
    return config


def worker(gpu, args, stubs, conn):
    setup_paths(args.kb, stubs)
    import torch
    import eval_from_generations as efg
    from kernelbench.dataset import construct_kernelbench_dataset

    config = make_config(efg, args)
    dataset = construct_kernelbench_dataset(level=config.level, source=config.dataset_src,
                                            dataset_name=config.dataset_name)
    while True:
        job = conn.recv()
        if job is None:
            return
        pid, problem, sample = job
        work = efg.WorkArgs(problem_id=problem, sample_id=sample, device=torch.device(f"cuda:{gpu}"))
        try:
            result = efg.evaluate_single_sample(work, config, dataset, args.run_dir)
            out = json.loads(json.dumps(result.model_dump() if result is not None else None, default=str))
        except Exception as e:  # KernelBench's batch_eval records a failure the same way
            out = {"compiled": False, "correctness": False, "metadata": {"error": str(e)}, "runtime": -1.0}
        conn.send(out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kb", required=True, help="KernelBench's repository root")
    p.add_argument("--run-dir", required=True, help="the generations folder (runs/RUN_NAME)")
    p.add_argument("--level", type=int, default=1)
    p.add_argument("--gpus", type=int, default=1)
    p.add_argument("--timeout", type=float, default=180.0, help="KernelBench's default per pair")
    p.add_argument("--out", required=True)
    p.add_argument("--build-dir", default=None)
    args = p.parse_args()
    args.build_dir = args.build_dir or tempfile.mkdtemp(prefix="kb-build-")
    stubs = tempfile.mkdtemp(prefix="kb-stubs-")
    stubbed = write_stubs(stubs)
    setup_paths(args.kb, stubs)
    pairs = sorted((NAME.search(n) for n in os.listdir(args.run_dir)), key=lambda m: (m is None, m and m.string))
    jobs_list = [(m.string[:-len("_kernel.py")], int(m.group(2)), int(m.group(3)))
                 for m in pairs if m and int(m.group(1)) == args.level]
    ctx = mp.get_context("spawn")  # as eval_from_generations.py sets
    start = time.time()
    todo = list(jobs_list)
    done = {}
    lock = threading.Lock()

    def start_worker(gpu):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=worker, args=(gpu, args, stubs, child), daemon=True)
        proc.start()
        child.close()
        return proc, parent

    def lane(gpu):
        """One GPU's pairs, one after another in its process; a pair past the timeout
        or a dead process is recorded as KernelBench's batch_eval records it."""
        proc, conn = start_worker(gpu)
        while True:
            with lock:
                if not todo:
                    break
                pid, problem, sample = todo.pop(0)
            t0 = time.time()
            conn.send((pid, problem, sample))
            out = None
            if conn.poll(args.timeout):
                try:
                    out = conn.recv()
                except EOFError:
                    out = {"compiled": False, "correctness": False, "runtime": -1.0,
                           "metadata": {"error": "the evaluating process died"}}
            else:
                out = {"compiled": False, "correctness": False, "runtime": -1.0,
                       "metadata": {"error": "Evaluation timed out"}}
            if out.get("metadata", {}).get("error") in ("the evaluating process died", "Evaluation timed out"):
                proc.kill()
                proc.join()
                proc, conn = start_worker(gpu)
            seconds = time.time() - t0
            with lock:
                done[pid] = dict(out or {}, gpu=gpu, eval_seconds=round(seconds, 2))
                write(partial=True)
                print(f"[{len(done)}/{len(jobs_list)}] {pid} gpu{gpu} compiled={out.get('compiled')} "
                      f"correct={out.get('correctness')} runtime={out.get('runtime')} "
                      f"ref={out.get('ref_runtime')} ({seconds:.1f} s)", flush=True)
        try:
            conn.send(None)
        except OSError:
            pass
        proc.join(timeout=30)

    def write(partial):
        with open(args.out, "w") as f:
            json.dump({"pairs": done, "seconds": round(time.time() - start, 2), "gpus": args.gpus,
                       "partial": partial, "stubbed_imports": stubbed,
                       "config": {k: v for k, v in vars(args).items()}}, f, indent=1, default=str)

    lanes = [threading.Thread(target=lane, args=(gpu,)) for gpu in range(args.gpus)]
    for t in lanes:
        t.start()
    for t in lanes:
        t.join()
    missing = [j[0] for j in jobs_list if j[0] not in done]
    for pid in missing:
        done[pid] = {"compiled": False, "correctness": False, "metadata": {"error": "Evaluation timed out"},
                     "runtime": -1.0}
    seconds = time.time() - start
    write(partial=False)
    print(f"KernelBench evaluation: {len(done)} pairs in {seconds:.1f} s on {args.gpus} GPU(s); "
          f"stubbed imports: {stubbed}", flush=True)


if __name__ == "__main__":
    main()
