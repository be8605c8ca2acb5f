"""kernel-lsp benchmark harness: a Triton candidate against its PyTorch reference.

Shipped inside the kernel-lsp binary and written to a cache directory at run
time. Imports nothing outside torch, triton and the standard library.

Protocol: JSON lines on stdout, one object per line, each with a "type":
  {"type": "started",  "pid": N}                      the process that runs user code
  {"type": "progress", "stage": "...", "message": "..."}
  {"type": "result",   ...}                           exactly one per run, last
  {"type": "error",    "kind": ..., "message": ...}   only when the harness itself breaks
User code may print anything: while it runs, fd 1 points at stderr and the
protocol goes to a saved copy of the real stdout.

Modes:
  python harness.py run --candidate F [options]   one run, then exit
  python harness.py serve [--cpu]                 warm worker: imports torch and
      triton once, reads one JSON request per line on stdin ({"argv": [...]}),
      forks a fresh child per request before CUDA is touched, and writes
      {"type": "done", "pid": CHILD, "status": S} when the child has ended.

Steps of one run, in order: find_reference, load_module (both from their source
alone, with --set overrides), build_models_kb, check_correctness_kb (KernelBench's
protocol), check_determinism, time_models (interleaved), kernelbench_timing
(KernelBench's cuda_event method, and the reference as a CUDA graph),
count_launches, kernel_stats; any exception is located in the candidate by
locate_error.
"""

import argparse
import ast
import importlib.util
import inspect
import json
import math
import os
import platform
import re
import sys
import threading
import time
import traceback

PROTOCOL_FD = 1
SIBLING_SUFFIXES = ("_new", "_triton", "_candidate", "_opt", "_kernel")
REFERENCE_COMMENT = re.compile(r"^\s*#\s*kernel-lsp:\s*reference\s*=\s*(\S+)\s*$", re.MULTILINE)
HAS_MODEL = re.compile(r"^class\s+Model\s*[(:]", re.MULTILINE)


# ---------------------------------------------------------------- protocol


def emit(obj):
    data = (json.dumps(obj, default=str) + "\n").encode()
    while data:
        data = data[os.write(PROTOCOL_FD, data):]


def progress(stage, message):
    emit({"type": "progress", "stage": stage, "message": message})


def protect_protocol():
    """Keeps user prints off the protocol: fd 1 becomes stderr, the protocol a saved fd."""
    global PROTOCOL_FD
    sys.stdout.flush()
    PROTOCOL_FD = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr


class BenchFailure(Exception):
    """An error with a kind and a place, reported in the result's `error`."""

    def __init__(self, kind, message, file=None, line=None, column=None, **extra):
        super().__init__(message)
        self.info = {"kind": kind, "message": message, "file": file, "line": line, "column": column}
        self.extra = extra


# ---------------------------------------------------------------- imports


def import_torch_and_triton(cpu):
    """Imports torch, picks the mode, then imports triton (TRITON_INTERPRET is read at import)."""
    # NVML answers "is there a GPU" without initialising CUDA, so a forked child still can.
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    try:
        import torch
    except ImportError as e:
        raise missing_dependency("torch", e)
    gpu = not cpu and torch.cuda.is_available()
    if not gpu:
        os.environ["TRITON_INTERPRET"] = "1"
    try:
        import triton  # noqa: F401
    except ImportError as e:
        raise missing_dependency("triton", e)
    if not gpu:
        pin_autotune_under_interpreter()
    return "gpu" if gpu else "cpu-interpreter"


def pin_autotune_under_interpreter():
    """Under TRITON_INTERPRET=1 the autotuner cannot time its configs: Triton 3.9's
    interpreter has no driver (`RuntimeError: 0 active drivers ([]). There should
    only be one.`). Every config then times the same, so the autotuner keeps the
    first (after its own pruning) and the candidate runs; correctness only, as
    everything under the interpreter. Also skips the on-disk tuning cache
    (`cache_results=True`), whose key asks the driver for the target."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return

    def _bench(self, *args, config, **meta):
        return [0.0, 0.0, 0.0]

    def check_disk_cache(self, tuning_key, configs, bench_fn):
        bench_fn()
        return False

    Autotuner._bench = _bench
    if hasattr(Autotuner, "check_disk_cache"):
        Autotuner.check_disk_cache = check_disk_cache


def missing_dependency(name, err):
    return BenchFailure(
        "missing-dependency",
        f"{sys.executable} cannot import {name} ({err}). Install it with "
        f"`{sys.executable} -m pip install torch triton`, or point kernel-lsp at a Python "
        f"that has them (--python PATH, or the `python` setting).",
    )


# ---------------------------------------------------------------- find_reference


def find_reference(candidate, explicit, configured):
    """Returns (path or None if the candidate holds Model itself, how it was found).

    Order: --reference on the command line; a `# kernel-lsp: reference = PATH`
    comment in the candidate (relative to it); `class Model` in the candidate;
    the configured `reference`; a sibling named by the rule in `sibling_references`.
    """
    if explicit:
        return require_file(explicit, "--reference"), "--reference"
    source = read_text(candidate)
    m = REFERENCE_COMMENT.search(source)
    if m:
        path = os.path.join(os.path.dirname(candidate), m.group(1))
        line = source[: m.start(1)].count("\n") + 1
        return require_file(path, "the reference comment", candidate, line), "comment"
    if HAS_MODEL.search(source):
        return None, "same-file"
    if configured:
        return require_file(configured, "the `reference` setting"), "config"
    for path in sibling_references(candidate):
        if os.path.isfile(path) and HAS_MODEL.search(read_text(path)):
            return path, "sibling"
    names = ", ".join(os.path.basename(p) for p in sibling_references(candidate))
    raise BenchFailure(
        "no-reference",
        f"no reference found for {os.path.basename(candidate)}. Declare one: add "
        f"`# kernel-lsp: reference = path/to/ref.py` to the candidate, pass --reference, "
        f"set `reference` in kernel-lsp.toml, define `class Model` in the same file, "
        f"or put one beside it named {names}.",
        candidate, 1, 1,
    )


def sibling_references(candidate):
    """foo_new.py (or _triton, _candidate, _opt, _kernel) -> foo.py; then foo_ref.py,
    foo_reference.py, reference.py and ref.py in the same directory."""
    folder = os.path.dirname(candidate)
    stem = os.path.splitext(os.path.basename(candidate))[0]
    bases = [stem[: -len(s)] for s in SIBLING_SUFFIXES if stem.endswith(s) and len(stem) > len(s)]
    names = [f"{b}.py" for b in bases]
    for b in bases + [stem]:
        names += [f"{b}_ref.py", f"{b}_reference.py"]
    names += ["reference.py", "ref.py"]
    out = []
    for n in names:
        p = os.path.join(folder, n)
        if p not in out and os.path.abspath(p) != os.path.abspath(candidate):
            out.append(p)
    return out


def require_file(path, what, file=None, line=None):
    if not os.path.isfile(path):
        raise BenchFailure("no-reference", f"{what} names {path}, which does not exist", file, line, 1)
    return os.path.abspath(path)


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# ---------------------------------------------------------------- load_module


def load_module(path, name, overrides, used, isolated=False):
    """Executes a file as a module, replacing top-level `NAME = ...` assignments
    named in `overrides` (so derived constants follow); records which were used."""
    source = read_text(path)
    tree = ast.parse(source, filename=path)
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id in overrides:
                    node.value = ast.copy_location(ast.Constant(overrides[t.id]), node.value)
                    used.add(t.id)
    if isolated:
        return load_isolated(path, source, tree)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    exec(compile(tree, path, "exec"), module.__dict__)
    return module


# Temporary copies of isolated candidates -> the file the user wrote, so errors
# and kernel locations name the user's file.
ALIASES = {}
# The folders of those copies, removed when the run ends.
TEMP_FOLDERS = []


def remove_temp_folders():
    import shutil

    while TEMP_FOLDERS:
        shutil.rmtree(TEMP_FOLDERS.pop(), ignore_errors=True)


def real_path(path):
    path = os.path.abspath(path)
    return ALIASES.get(path, path)


def load_isolated(path, source, tree):
    """Loads a file the way KernelBench's evaluator loads a Triton candidate: its
    text is written to a fresh temporary file and imported from there, alone. No
    folder of the user's is on sys.path, so `from sibling import x` fails with the
    ModuleNotFoundError KernelBench would record as a compilation failure."""
    import tempfile

    folder = tempfile.mkdtemp(prefix="kernel-lsp-candidate-")
    TEMP_FOLDERS.append(folder)
    copy = os.path.join(folder, "candidate_module.py")
    with open(copy, "w", encoding="utf-8") as f:
        f.write(source)
    ALIASES[os.path.abspath(copy)] = os.path.abspath(path)
    for entry in (os.path.dirname(os.path.abspath(path)), ""):
        while entry in sys.path:
            sys.path.remove(entry)
    spec = importlib.util.spec_from_file_location("candidate_module", copy)
    module = importlib.util.module_from_spec(spec)
    try:
        exec(compile(tree, copy, "exec"), module.__dict__)
    except ModuleNotFoundError as e:
        local = local_module(path, e.name)
        if local is None:
            raise
        line, col = innermost_frame(e, os.path.abspath(path))
        raise BenchFailure(
            "local-import",
            f"`{e.name}` is {os.path.basename(local)} beside {os.path.basename(path)}: KernelBench loads a "
            f"candidate from its source alone (written to a temporary file), so this import fails there "
            f"with ModuleNotFoundError and the candidate counts as a compilation failure. Put what it "
            f"needs from {os.path.basename(local)} in this file.",
            os.path.abspath(path), line, col) from e
    return module


def local_module(path, name):
    """The file or package beside `path` that an import of `name` would have found."""
    if not name:
        return None
    base = os.path.join(os.path.dirname(os.path.abspath(path)), *name.split(".")[:1])
    for candidate in (base + ".py", os.path.join(base, "__init__.py"), base):
        if os.path.exists(candidate):
            return candidate
    return None


def settable_names(paths):
    """Top-level assigned names of the files, the ones --set can replace."""
    names = []
    for path in dict.fromkeys(paths):
        for node in ast.parse(read_text(path)).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            names += [t.id for t in targets if isinstance(t, ast.Name) and t.id not in names]
    return names


def parse_overrides(pairs):
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.isidentifier():
            raise BenchFailure("harness", f"--set expects NAME=VALUE, got {pair!r}")
        try:
            out[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[name] = value
    return out


# ---------------------------------------------------------------- the CPU interpreter's size guard

# Above these, a run on Triton's CPU interpreter (which runs each program in
# numpy, one at a time) takes many minutes a trial, or more memory than the
# machine has: refused before anything is allocated, with the way out.
CPU_GUARD_ELEMENTS = 1 << 26  # 64 Mi elements: 256 MiB as fp32, a tensor per input and output
CPU_GUARD_MEMORY_SHARE = 0.5  # of MemAvailable, for inputs, the reference's and the candidate's outputs


def available_memory():
    """MemAvailable in bytes, or None where /proc/meminfo cannot say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def input_footprint(ref_mod, new_mod, dtype):
    """(elements, bytes, biggest shape) of the task's inputs and init inputs,
    created on the meta device: shapes only, nothing allocated. None when the
    task's functions cannot run there (an explicit device, data-dependent code)."""
    import torch

    elements, size, biggest = 0, 0, None
    for what in ("get_inputs", "get_init_inputs"):
        f = getattr(ref_mod, what, None) or getattr(new_mod, what, None)
        if f is None:
            continue
        try:
            with torch.device("meta"):
                values = flatten(list(f()))
        except Exception:
            return None
        for x in values:
            if not isinstance(x, torch.Tensor):
                continue
            if x.device.type != "meta":
                return None
            width = torch.empty((), dtype=dtype).element_size() if x.is_floating_point() else x.element_size()
            elements += x.numel()
            size += x.numel() * width
            if biggest is None or x.numel() > biggest.numel():
                biggest = x
    return elements, size, (tuple(biggest.shape) if biggest is not None else None)


def gib(n):
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MiB"


def check_interpreter_size(ref_mod, new_mod, dtype, where):
    """Refuses, before anything is allocated, a CPU-interpreter run whose inputs
    are too large for it; says what was measured and how to run smaller."""
    found = input_footprint(ref_mod, new_mod, dtype)
    if found is None:
        return
    elements, size, shape = found
    # Inputs, the reference's output and the candidate's output, each about the inputs' size.
    need = 3 * size
    avail = available_memory()
    too_much_memory = avail is not None and need > CPU_GUARD_MEMORY_SHARE * avail
    if elements <= CPU_GUARD_ELEMENTS and not too_much_memory:
        return
    shape_text = " x ".join(str(d) for d in shape) if shape else "?"
    why = (f"about {gib(need)} with outputs, more than half of the {gib(avail)} available"
           if too_much_memory else f"over {CPU_GUARD_ELEMENTS >> 20} Mi elements: many minutes a trial there")
    raise BenchFailure(
        "too-large-for-interpreter",
        f"the task's inputs are {elements:,} elements ({gib(size)}; the largest {shape_text}), too large for "
        f"Triton's CPU interpreter ({why}). Check correctness at reduced sizes: `kernel-lsp bench --small` "
        f"(or Benchmark at reduced sizes in the editor), shrink with --set NAME=VALUE, run on a GPU, "
        f"or --full-size to run it anyway",
        *where)


# ---------------------------------------------------------------- watching the forward

# Moving data, not computing the task: factories, copies, casts, fills. Views
# are told by the operator itself (`is_view`).
# Allocations: not yet a computation, whatever their dtype.
ALLOCATIONS = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros",
                         "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full",
                         "scalar_tensor", "arange"})
WATCH_MOVES = ALLOCATIONS | frozenset({
    "fill_", "zero_", "copy_", "clone", "_to_copy", "to", "detach", "alias", "lift_fresh", "lift_fresh_copy",
    "contiguous", "resize_", "set_", "_local_scalar_dense", "cat", "stack", "_unsafe_view", "as_strided_", "rand",
    "randn", "randint", "normal_", "uniform_", "_assert_async", "_assert_scalar",
})
# Operators that contract (matrix products, convolutions, attention): one
# family, compared by FLOPs, since `addmm`, `mm`, `bmm` and `einsum` are the
# same work spelled differently.
CONTRACTIONS = frozenset({"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "mv", "addmv", "dot", "vdot",
                          "_scaled_mm", "convolution", "_convolution", "conv1d", "conv2d", "conv3d",
                          "convolution_backward", "cudnn_convolution", "_scaled_dot_product_efficient_attention",
                          "_scaled_dot_product_flash_attention", "_scaled_dot_product_cudnn_attention",
                          "_efficient_attention_forward", "_flash_attention_forward", "tensordot"})
# The share of the reference's own work that, redone by PyTorch operators in
# ModelNew.forward, makes the result PyTorch's, not the kernel's.
TORCH_SHARE = 0.75
HALF = ("float16", "bfloat16")


def current_stream_handle():
    try:
        import torch

        return torch.cuda.current_stream().cuda_stream if torch.cuda.is_initialized() else None
    except Exception:
        return None


def candidate_line(path):
    """The innermost line of the running stack that is in the candidate's file."""
    frame = sys._getframe(2)
    while frame is not None:
        if real_path(frame.f_code.co_filename) == path:
            return frame.f_lineno
        frame = frame.f_back
    return None


def contraction_flops(name, tensors, out):
    """FLOPs of a contraction from its operands' shapes (2 per multiply-add):
    a matrix product is 2 x its output's elements x the reduced length, a
    convolution 2 x its output's elements x a filter's elements, attention
    4 x batch x heads x query length x key length x head size. (PyTorch's own
    flop counter is not imported: its import starts Inductor, which leaves a
    cache folder in TMPDIR.)"""
    import torch

    outs = [t for t in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(t, torch.Tensor)]
    if not outs:
        return None
    first = outs[0]
    if "attention" in name and len(tensors) >= 2 and tensors[0].dim() >= 2 and tensors[1].dim() >= 2:
        q, k = tensors[0], tensors[1]
        return 4.0 * q.numel() * k.shape[-2]
    if "conv" in name and len(tensors) >= 2 and tensors[1].dim() >= 3:
        return 2.0 * first.numel() * (tensors[1].numel() / max(tensors[1].shape[0], 1))
    # Matrix products: the reduced length is the last dimension of the first
    # operand that is not a bias (addmm/baddbmm/addmv take the bias first).
    operands = tensors[1:] if name.startswith("add") or name.startswith("badd") else tensors
    if operands and operands[0].dim() >= 1:
        return 2.0 * first.numel() * operands[0].shape[-1]
    return None


def op_work(func, args, kwargs, out, name):
    """What an operator costs, in one unit for all: FLOPs for a contraction
    (matrix products, convolutions, attention), else the largest tensor it
    reads or writes (one pass over it)."""
    import torch
    from torch.utils._pytree import tree_flatten

    tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
    if name in CONTRACTIONS:
        flops = contraction_flops(name, tensors, out)
        if flops is not None:
            return flops
    sizes = [t.numel() for t in tensors] + [t.numel() for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
    return float(max(sizes, default=0))


def forward_watch(recorder, candidate, task_dtype):
    """A TorchDispatchMode that records every ATen operator run outside Triton's
    launches: its name, work, the line of the candidate it came from, the
    half-precision tensors it made (on a fp32 task), and its stream."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class ForwardWatch(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.work = {}  # operator -> work
            self.lines = {}  # operator -> first candidate line
            self.half = []  # (operator, dtype, line)
            self.streams = set()
            self.names = {}  # family -> the operators seen in it

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if recorder.launching:
                return out
            name = func.overloadpacket.__name__
            line = candidate_line(candidate) if candidate else None
            # An allocation in half precision is not yet a computation: a
            # kernel handed it is (the launch check below).
            if task_dtype == torch.float32 and name not in ALLOCATIONS:
                for t in tree_flatten(out)[0]:
                    if isinstance(t, torch.Tensor) and str(t.dtype).replace("torch.", "") in HALF:
                        self.half.append((name, str(t.dtype).replace("torch.", ""), line))
                        break
            self.streams.add(current_stream_handle())
            if getattr(func, "is_view", False) or name in WATCH_MOVES:
                return out
            family = "contraction" if name in CONTRACTIONS else name
            self.work[family] = self.work.get(family, 0.0) + op_work(func, args, kwargs, out, name)
            self.lines.setdefault(family, line)
            self.names.setdefault(family, set()).add(name)
            return out

    return ForwardWatch()


def explain_mismatch(failed, ref, new, ref_mod, new_mod, device, dtype, args, recorder, candidate, where, names):
    """After a mismatch: the forward watch, once. What it finds (a precision
    drop, PyTorch's own result, ...) is raised in the mismatch's place, with it."""
    try:
        failed.extra["watch"] = watch_forward(ref, new, task_inputs(ref_mod, new_mod, device, dtype, args.seed),
                                              recorder, candidate, dtype, where, names, args.strict)
    except BenchFailure as seen:
        seen.info["message"] += f" The output also fails the check: {failed.info['message']}"
        seen.extra = {**failed.extra, **seen.extra, "incorrect": True}
        raise seen from None
    except Exception:
        pass


RUN_CODES = {"torch-computes-the-task": "KL102", "precision-downgrade": "KL106", "side-stream-or-thread": "KL105"}
SILENCED = re.compile(r"#\s*kernel-lsp:\s*ignore(?:\[([^\]]*)\])?")


def user_silenced(path, line, code):
    """Whether line `line` of `path` carries `# kernel-lsp: ignore` (all codes) or `ignore[..CODE..]`."""
    try:
        text = read_text(path).splitlines()[line - 1]
    except (OSError, IndexError, UnicodeDecodeError):
        return False
    m = SILENCED.search(text)
    return bool(m) and (m.group(1) is None or code in [c.strip().upper() for c in m.group(1).split(",")])


def never_launched(names, where):
    """KL103 at run time: the watched forward launched none of the file's kernels."""
    return BenchFailure(
        "kernel-never-launched",
        f"ModelNew.forward launched no Triton kernel (the file defines {', '.join(names)}): the result comes from "
        f"something else, and a speedup would not be the kernel's. KernelBench's Triton track does not count it.",
        *where)


def watch_forward(ref, new, inputs, recorder, candidate, dtype, where, names, strict=False, tol=None):
    """Runs the reference's and the candidate's forward once more (never timed)
    and judges what ran, not how the code reads: PyTorch redoing most of the
    reference's work (KL102), tensors in half precision on a fp32 task (KL106),
    launches from another thread or on another stream, or work left running when
    forward returned (KL105). Returns what it saw, for the result."""
    import tempfile

    import torch

    if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
        # Running an operator under a dispatch mode makes Inductor create its
        # cache folder in TMPDIR: one of ours instead, removed after the run.
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="kernel-lsp-inductor-")
        TEMP_FOLDERS.append(os.environ["TORCHINDUCTOR_CACHE_DIR"])
    with torch.no_grad():
        ref_watch = forward_watch(recorder, None, dtype)
        with ref_watch:
            expected = ref(*inputs)
        new_watch = forward_watch(recorder, candidate, dtype)
        recorder.places, recorder.half_args = [], []
        thread = threading.get_ident()
        start_stream = current_stream_handle()
        got = []
        with new_watch:
            launches = recorder.record(lambda: got.append(new(*inputs)))
        late = len(recorder.places)
        time.sleep(0.05)
        late = len(recorder.places) - late
    if names and not launches:
        raise never_launched(names, where)
    total = sum(ref_watch.work.values())
    redone = {op: min(w, new_watch.work.get(op, 0.0)) for op, w in ref_watch.work.items()}
    share = sum(redone.values()) / total if total > 0 else 0.0
    seen = {"reference_ops": sorted(ref_watch.work, key=ref_watch.work.get, reverse=True)[:8],
            "candidate_ops": sorted(new_watch.work, key=new_watch.work.get, reverse=True)[:8],
            "torch_share_of_reference_work": round(share, 4)}
    def finding(kind, line):
        """A finding the user silenced on its line (`# kernel-lsp: ignore[KL106]`)
        is kept in `watch.suppressed`, not raised; never for LLM-written code."""
        if not strict and line and user_silenced(candidate, line, RUN_CODES[kind]):
            entry = {"kind": kind, "code": RUN_CODES[kind], "line": line}
            if entry not in seen.setdefault("suppressed", []):
                seen["suppressed"].append(entry)
            return False
        return True

    if share > TORCH_SHARE:
        ops = sorted((op for op in redone if redone[op] > 0), key=redone.get, reverse=True)
        line = next((new_watch.lines.get(op) for op in ops if new_watch.lines.get(op)), None)
        spelled = [n for op in ops for n in sorted(new_watch.names.get(op, {op}))]
    if share > TORCH_SHARE and finding("torch-computes-the-task", line):
        raise BenchFailure(
            "torch-computes-the-task",
            f"PyTorch ran {', '.join('aten.' + op for op in spelled[:4])} in ModelNew.forward: "
            f"{share:.0%} of the reference's own work (its FLOPs, or elements for other operators) was done by "
            f"PyTorch operators, not by the file's kernels. The speedup would be PyTorch's.",
            where[0], line or where[1], 1 if line else where[2], watch=seen)
    for op, half, line in new_watch.half:
        if not finding("precision-downgrade", line):
            continue
        raise BenchFailure(
            "precision-downgrade",
            f"ModelNew.forward made {half} tensors (aten.{op}) on a fp32 task: computing in half precision is "
            f"not the task KernelBench times, even where the result lands within tolerance.",
            where[0], line or where[1], 1 if line else where[2], watch=seen)
    # A kernel given half-precision tensors no operator of this forward made
    # (a weight cast once and kept): the casts above explain the others.
    if dtype == torch.float32 and recorder.half_args and not new_watch.half:
        kernel, half = recorder.half_args[0]
        raise BenchFailure(
            "precision-downgrade",
            f"`{kernel}` was launched with a {half} tensor on a fp32 task: computing in half precision is not "
            f"the task KernelBench times, even where the result lands within tolerance.", *where, watch=seen)
    threads = {t for t, _ in recorder.places}
    streams = {s for _, s in recorder.places if s is not None} | {s for s in new_watch.streams if s is not None}
    other = [s for s in streams if s != start_stream]
    if threads - {thread} or other or late:
        why = ("a kernel was launched from another thread" if threads - {thread} else
               "work ran on a CUDA stream other than the current one" if other else
               "launches went on after forward returned")
        raise BenchFailure(
            "side-stream-or-thread",
            f"{why}: the timer stops when forward returns on the current stream, so that work would not be "
            f"timed.", *where, watch=seen)
    # `inputs` are the first trial's, run again after the other trials': an
    # output that follows the calls before it (state kept between calls) no
    # longer matches.
    if (tol is not None and got and isinstance(got[0], torch.Tensor) and isinstance(expected, torch.Tensor)
            and got[0].shape == expected.shape and not torch.allclose(expected, got[0], atol=tol[0], rtol=tol[1])):
        worst = float((expected.double() - got[0].double()).abs().nan_to_num(nan=float("inf")).max())
        raise BenchFailure(
            "output-reused",
            f"run again with the first trial's inputs after the other trials, ModelNew's output no longer matches "
            f"the reference's (max abs diff {short(worst)}): it depends on earlier calls, not only on its input.",
            *where, watch=seen)
    return seen


# ---------------------------------------------------------------- check_correctness


def flatten(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flatten(o)]
    return [out]


def compare(ref_out, new_out, atol, rtol):
    """Returns None when all outputs match, else a description of the worst element."""
    import torch

    refs, news = flatten(ref_out), flatten(new_out)
    if len(refs) != len(news):
        return {"message": f"the candidate returns {len(news)} outputs, the reference {len(refs)}"}
    for i, (r, n) in enumerate(zip(refs, news)):
        if not isinstance(r, torch.Tensor):
            continue
        if not isinstance(n, torch.Tensor) or n.shape != r.shape:
            got = tuple(n.shape) if isinstance(n, torch.Tensor) else type(n).__name__
            return {"output": i, "message": f"output {i}: shape {got}, expected {tuple(r.shape)}"}
        r64, n64 = r.detach().double().cpu(), n.detach().double().cpu()
        diff = (r64 - n64).abs()
        diff = torch.where(torch.isnan(r64) & torch.isnan(n64), torch.zeros_like(diff), diff)
        diff = torch.nan_to_num(diff, nan=math.inf)
        excess = diff - (atol + rtol * r64.abs())
        if diff.numel() == 0 or bool((excess <= 0).all()):
            continue
        flat = int(torch.argmax(excess).item())
        index = list(torch.unravel_index(torch.tensor(flat), r.shape)) if r.dim() else []
        index = [int(v) for v in index]
        worst_abs = float(diff.reshape(-1)[flat])
        ref_v, new_v = float(r64.reshape(-1)[flat]), float(n64.reshape(-1)[flat])
        rel = worst_abs / abs(ref_v) if ref_v else math.inf
        bad = int((excess > 0).sum())
        return {
            "output": i, "index": index, "max_abs_diff": worst_abs, "max_rel_diff": rel,
            "expected": ref_v, "got": new_v, "mismatched": bad, "total": diff.numel(),
            "message": f"output {i} differs at {tuple(index)}: expected {ref_v:.6g}, got {new_v:.6g} "
                       f"(abs {worst_abs:.3g}, rel {rel:.3g}; {bad} of {diff.numel()} elements "
                       f"outside atol={atol:g} rtol={rtol:g})",
        }
    return None


# ---------------------------------------------------------------- the KernelBench protocol

# KernelBench main's tolerance by precision (atol = rtol), and the tolerance
# its v0/v0.1 and kernel-lsp before it used for everything ("legacy").
PRECISION_TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}
PRECISION_DTYPE = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
EXCESSIVE_SPEEDUP = 10.0
# A reference whose eager forward takes this many times its CUDA-graph replay
# spends most of its time launching kernels.
LAUNCH_BOUND = 2.0
KB_WARMUP, KB_TRIALS, KB_DISCARD = 3, 100, 1


def seed_everything(seed):
    """KernelBench's set_seed: the CPU generator and the current CUDA device's."""
    import torch

    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)


def derive_trial_seeds(seed, n):
    """One seed per correctness trial, drawn as KernelBench draws them: the CPU
    generator seeded with `seed`, then one integer in [0, 2**32 - 1) per trial."""
    import torch

    torch.manual_seed(seed)
    return [int(torch.randint(0, 2 ** 32 - 1, (1,)).item()) for _ in range(n)]


def to_task(x, device, dtype):
    """Tensors take the task's dtype, then move to the device; anything else stays."""
    import torch

    return x.to(dtype=dtype).to(device=device) if isinstance(x, torch.Tensor) else x


def task_dtype(args):
    import torch

    return getattr(torch, PRECISION_DTYPE[args.precision])


def build_models_kb(ref_mod, new_mod, device, dtype, seed):
    """Init inputs under the seed, each model built right after re-seeding, then
    both moved with `.to(device, dtype)`. Left in training mode, as KernelBench leaves them."""
    import torch

    if not hasattr(ref_mod, "Model"):
        raise BenchFailure("no-reference", f"{ref_mod.__file__} defines no `class Model`", ref_mod.__file__, 1, 1)
    if not hasattr(new_mod, "ModelNew"):
        raise BenchFailure("exception", "the candidate defines no `class ModelNew`", None, 1, 1)
    init = getattr(ref_mod, "get_init_inputs", None)
    seed_everything(seed)
    if init is not None:
        init_args = [to_task(x, device, dtype) for x in in_reference(ref_mod, "get_init_inputs()", init)]
    else:
        init = getattr(new_mod, "get_init_inputs", None)
        init_args = [to_task(x, device, dtype) for x in (init() if init else [])]
    with torch.no_grad():
        seed_everything(seed)
        ref = in_reference(ref_mod, "Model(...)", ref_mod.Model, *init_args)
        seed_everything(seed)
        new = new_mod.ModelNew(*init_args)
        ref = ref.to(device=device, dtype=dtype)
        new = new.to(device=device, dtype=dtype)
    return ref, new


def task_inputs(ref_mod, new_mod, device, dtype, seed):
    get = getattr(ref_mod, "get_inputs", None)
    if get is None:
        get = getattr(new_mod, "get_inputs")
        seed_everything(seed)
        return [to_task(x, device, dtype) for x in get()]
    seed_everything(seed)
    return [to_task(x, device, dtype) for x in in_reference(ref_mod, "get_inputs()", get)]


def in_reference(ref_mod, what, f, *args):
    """Runs reference code; its exception is reported against the reference, not the candidate."""
    try:
        return f(*args)
    except BenchFailure:
        raise
    except Exception as e:  # noqa: BLE001 - any failure of the reference is the reference's
        path = real_path(getattr(ref_mod, "__file__", "") or "")
        line, col = innermost_frame(e, path)
        raise BenchFailure(
            "reference-error",
            f"the reference ({os.path.basename(path)}) failed in {what}: {type(e).__name__}: {e}. "
            f"The candidate was not judged: fix the reference, or run where it can run "
            f"(e.g. a GPU for `.cuda()`).",
            path, line, col) from e


def tolerances(args):
    """(name, atol, rtol) of the chosen profile, then of the other named profiles."""
    kb = PRECISION_TOLERANCE[args.precision]
    named = {"kernelbench": (kb, kb), "legacy": (args.atol, args.rtol)}
    if args.profile == "custom":
        chosen = ("custom", args.tolerance, args.tolerance)
    else:
        chosen = (args.profile, *named[args.profile])
    return chosen, named


def describe_index(index):
    return "output[" + ", ".join(str(i) for i in index) + "]" if index else "output"


def check_correctness_kb(ref, new, ref_mod, new_mod, device, args, where, info):
    """KernelBench's correctness check: per-trial seeds, fresh inputs in the task
    dtype, `torch.allclose(output, output_new, atol=tol, rtol=tol)`; every trial
    must pass. Fills `info` with the tolerance, the worst difference and where it
    is, and the verdict of each profile; raises BenchFailure when the chosen
    profile fails."""
    import torch

    dtype = task_dtype(args)
    (profile, atol, rtol), named = tolerances(args)
    seeds = derive_trial_seeds(args.seed, args.trials)
    info.update({"tolerance_profile": profile, "precision": args.precision, "tolerance": atol,
                 "atol": atol, "rtol": rtol, "trial_seeds": seeds})
    passed = {name: 0 for name in [profile, *named]}
    checks = {profile: (atol, rtol), **named}
    worst = None  # (abs diff, index, trial)
    nan_at = None
    first = None  # (reference output, candidate output) of the first trial
    started = time.perf_counter()
    for trial, seed in enumerate(seeds):
        estimate = ""
        if trial:
            each = (time.perf_counter() - started) / trial
            estimate = f", about {each:.0f} s a trial, {each * (len(seeds) - trial):.0f} s left"
        progress("correctness", f"trial {trial + 1} of {len(seeds)} (seed {seed}{estimate})")
        inputs = task_inputs(ref_mod, new_mod, device, dtype, seed)
        with torch.no_grad():
            seed_everything(seed)
            expected = in_reference(ref_mod, "Model.forward", ref, *inputs)
            seed_everything(seed)
            got = new(*inputs)
        if not isinstance(expected, torch.Tensor):
            raise BenchFailure(
                "non-tensor-output",
                f"the reference returns a {type(expected).__name__}, not a tensor: KernelBench compares one "
                f"output tensor (`output.shape`), so it counts every candidate for this task as incorrect",
                real_path(getattr(ref_mod, "__file__", "")), 1, 1, **info)
        if not isinstance(got, torch.Tensor):
            raise BenchFailure(
                "non-tensor-output",
                f"ModelNew returns a {type(got).__name__}, not a tensor: KernelBench reads `output_new.shape` "
                f"and records the AttributeError as a runtime error (incorrect). Return the tensor the "
                f"reference returns.", *where, **info)
        if expected.shape != got.shape:
            raise BenchFailure("mismatch", f"output shape {tuple(got.shape)}, expected {tuple(expected.shape)} "
                               f"(trial {trial + 1})", *where, **info)
        if first is None:
            first = (expected.detach().clone(), got.detach().clone())
        elif (got.shape == first[1].shape and torch.equal(got, first[1])
              and not torch.equal(expected, first[0])):
            # Watched, not guessed: new inputs, a new reference output, the same candidate output.
            raise BenchFailure(
                "output-reused",
                f"ModelNew returned the same output for trial {trial + 1}'s new inputs as for trial 1's, where "
                f"the reference's output changed: the output does not depend on the input (kept from an earlier "
                f"call?). KernelBench counts it as incorrect.", *where, **info)
        for name, (a, r) in checks.items():
            try:
                ok = torch.allclose(expected, got, atol=a, rtol=r)
            except RuntimeError as e:
                raise BenchFailure("mismatch", f"torch.allclose cannot compare the outputs: {e}", *where, **info)
            passed[name] += int(bool(ok))
        diff = (expected.detach().double() - got.detach().double()).abs()
        if nan_at is None and bool(torch.isnan(diff).any()):
            flat = int(torch.isnan(diff).reshape(-1).nonzero()[0].item())
            nan_at = ([int(v) for v in torch.unravel_index(torch.tensor(flat), diff.shape)] if diff.dim() else [], trial)
        finite = torch.nan_to_num(diff, nan=0.0)
        if finite.numel():
            flat = int(torch.argmax(finite).item())
            value = float(finite.reshape(-1)[flat])
            if worst is None or value > worst[0]:
                index = [int(v) for v in torch.unravel_index(torch.tensor(flat), diff.shape)] if diff.dim() else []
                worst = (value, index, trial)
    trials = len(seeds)
    verdicts = {name: {"atol": checks[name][0], "rtol": checks[name][1], "correct": passed[name] == trials,
                       "trials_passed": passed[name]} for name in checks}
    info["verdicts"] = verdicts
    info["trials_passed"] = passed[profile]
    info["trials"] = trials
    if worst is not None:
        info["max_abs_diff"], info["max_abs_diff_index"], info["max_abs_diff_trial"] = worst[0], worst[1], worst[2]
    where_worst = f"max abs diff {short(worst[0])} at {describe_index(worst[1])}" if worst else "no elements"
    if nan_at is not None:
        # A NaN is no difference of 0: the finite figures would say "max abs diff 0".
        for key in ("max_abs_diff", "max_abs_diff_index", "max_abs_diff_trial"):
            info.pop(key, None)
        info["nan_index"] = nan_at[0]
        raise BenchFailure("mismatch", f"the candidate's output has NaN at {describe_index(nan_at[0])} (trial "
                           f"{nan_at[1] + 1}); torch.allclose counts NaN as a mismatch, and so does KernelBench",
                           *where, **info)
    disagree = verdict_note(profile, verdicts, args.precision, where_worst)
    if disagree:
        info["verdict_note"] = disagree
    if not verdicts[profile]["correct"]:
        message = disagree or (f"{passed[profile]} of {trials} trials within atol={atol:g} rtol={rtol:g} "
                               f"({describe_profile(profile, args.precision)}): {where_worst}")
        raise BenchFailure("mismatch", message, *where, **info)
    return worst[0] if worst else 0.0


def describe_profile(name, precision):
    return {"kernelbench": f"KernelBench's {precision} tolerance", "legacy": "legacy"}.get(name, "the set tolerance")


def short(x):
    """1e-4, 4.1e-4, 0.5 -> compact scientific form."""
    if x == 0 or 1e-2 < abs(x) < 1e3:
        return f"{x:.2g}"
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def verdict_note(profile, verdicts, precision, where_worst):
    """One line naming each verdict when the profiles disagree:
    "correct at 1e-2 (legacy); fails KernelBench's fp32 tolerance 1e-4: max abs diff ..."."""
    if len({v["correct"] for v in verdicts.values()}) < 2:
        return None
    parts = []
    for name in dict.fromkeys(["legacy", "kernelbench", profile]):
        v = verdicts[name]
        tol = short(v["atol"])
        if name == "legacy":
            parts.append(f"{'correct' if v['correct'] else 'fails'} at {tol} (legacy)")
        elif name == "kernelbench":
            parts.append(f"{'correct at' if v['correct'] else 'fails'} KernelBench's {precision} tolerance {tol}")
        else:
            parts.append(f"{'correct at' if v['correct'] else 'fails'} the set tolerance {tol}")
    return "; ".join(parts) + ": " + where_worst


def clear_l2():
    """Fills 256 MB (more than any L2) right before a timed call, as KernelBench does."""
    import torch

    scratch = torch.empty((32, 1024, 1024), dtype=torch.int64, device="cuda")
    scratch.fill_(42)
    del scratch


def time_cuda_event(fn, inputs):
    """KernelBench's cuda_event method: synchronized warm-ups, then for each trial a
    synchronize, the L2 clear, events around one call, a synchronize; the first
    trial is dropped. Runs with autograd on, as KernelBench's timing does."""
    import torch

    for _ in range(KB_WARMUP):
        fn(*inputs)
        torch.cuda.synchronize()
    torch.cuda.empty_cache()
    times = []
    for trial in range(KB_TRIALS + KB_DISCARD):
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        clear_l2()
        start.record()
        fn(*inputs)
        end.record()
        torch.cuda.synchronize()
        if trial >= KB_DISCARD:
            times.append(start.elapsed_time(end))
    return times


def kernelbench_timing(ref, new, inputs, result):
    """KernelBench's figure: mean of its cuda_event trials, the candidate first and
    then the reference, as its evaluator orders them; then the reference replayed
    as a CUDA graph when it can be captured (its launch-overhead-free time)."""
    import torch

    progress("timing", f"KernelBench's cuda_event method: {KB_TRIALS} trials each")
    new_times = time_cuda_event(new, inputs)
    ref_times = time_cuda_event(ref, inputs)
    new_mean, ref_mean = sum(new_times) / len(new_times), sum(ref_times) / len(ref_times)
    result["kernelbench_ref_ms"], result["kernelbench_new_ms"] = ref_mean, new_mean
    result["kernelbench_speedup"] = ref_mean / new_mean if new_mean > 0 else None
    result["kernelbench_timing"] = (f"cuda_event: {KB_WARMUP} warm-ups, {KB_TRIALS} trials, L2 cleared before "
                                    f"each, mean")
    if result["kernelbench_speedup"] is not None and result["kernelbench_speedup"] > EXCESSIVE_SPEEDUP:
        result["excessive_speedup"] = True
        result["excessive_speedup_note"] = (
            f"over {EXCESSIVE_SPEEDUP:g}x: KernelBench flags this as `excessive_speedup` and asks for a check "
            f"that the kernel does the reference's work (no skipped computation, no cached result)")
    progress("timing", "capturing the reference in a CUDA graph")
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.no_grad(), torch.cuda.stream(side):
            for _ in range(3):
                ref(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(graph):
            ref(*inputs)
        graph_times = time_cuda_event(lambda *a: graph.replay(), inputs)
    except Exception as e:  # not every reference can be captured (host syncs, dynamic shapes)
        result["graph_speedup"] = None
        result["graph_error"] = f"the reference cannot be captured in a CUDA graph: {str(e).strip()[:300]}"
        torch.cuda.synchronize()
        return
    graph_mean = sum(graph_times) / len(graph_times)
    result["graph_ref_ms"] = graph_mean
    result["graph_speedup"] = graph_mean / new_mean if new_mean > 0 else None
    note = launch_bound_note(ref_mean, graph_mean)
    if note:
        result["launch_bound_reference"] = True
        result["kernelbench_spread_note"] = note


def launch_bound_note(ref_ms, graph_ms):
    """What to say of KernelBench's figure when the reference is launch-bound:
    its time is the host issuing launches, which moves between processes, so
    KernelBench's own speedup for the pair moves with it (measured on an H100:
    9-13% between processes on cuDNN's GRU, 31-35% from lowest to highest over
    12 runs) and a single run of either tool can differ from the other by that
    much. None when the reference is not launch-bound."""
    if not graph_ms or graph_ms <= 0 or ref_ms < LAUNCH_BOUND * graph_ms:
        return None
    return (f"launch-bound reference ({ref_ms:.1f} ms eager, {graph_ms:.1f} ms as a CUDA graph): its time follows "
            f"the host's launch rate, so KernelBench's speedup for this pair moves by 10-30% from one run to the "
            f"next, its own evaluator's included; compare runs by the CUDA-graph speedup")


# ---------------------------------------------------------------- check_determinism


def check_determinism(new, ref_mod, new_mod, device, args, where):
    """Runs one input twice: outputs that differ beyond the tolerance mean a race."""
    import torch

    progress("determinism", "running one input twice")
    inputs = task_inputs(ref_mod, new_mod, device, task_dtype(args), args.seed + 1000)
    with torch.no_grad():
        first = [t.clone() if isinstance(t, torch.Tensor) else t for t in flatten(new(*inputs))]
        second = flatten(new(*inputs))
    bad = compare(first, second, args.atol, args.rtol)
    if bad:
        raise BenchFailure("nondeterministic",
                           "two runs on the same input differ (a race between programs?): " + bad.pop("message"),
                           *where, **{"mismatch": bad})
    return all(torch.equal(a, b) for a, b in zip(first, second) if isinstance(a, torch.Tensor))


# ---------------------------------------------------------------- time_models


def time_models(ref, new, inputs, args):
    """Median and spread of CUDA-event times of both models, interleaved.

    One repeat of the reference, then one of the candidate, and again, on the
    same stream with the same 256 MB L2 flush before each. A launch-bound model
    (cuDNN's GRU: about 6,240 launches a forward) takes as long as the host
    needs to issue its launches, and that moves by tens of percent from one
    process to the next and within a process; timing the two side by side makes
    both see the same host, clocks and contention, so their ratio holds even
    where the absolute times move. The device is idle at the start of each
    timed region (a synchronize after the flush): a candidate that leaves work
    queued would otherwise give the next model's launches a head start.
    """
    import torch

    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    models = (ref, new)
    with torch.no_grad():
        once = []
        for model in models:
            t0 = time.perf_counter()
            model(*inputs)
            torch.cuda.synchronize()
            once.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(args.warmup):
            for model in models:
                model(*inputs)
        torch.cuda.synchronize()
        pair = min(sum(once), (time.perf_counter() - t0) / max(args.warmup, 1)) if args.warmup else sum(once)
        # both models share the budget of two
        repeats = max(5, min(args.repeats, int(2 * args.time_budget / max(pair, 1e-6))))
        progress("timing", f"reference and candidate interleaved: {repeats} repeats each")
        events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                   for _ in range(repeats)] for _ in models]
        for i in range(repeats):
            for model, ev in zip(models, events):
                flush.zero_()
                torch.cuda.synchronize()
                ev[i][0].record()
                model(*inputs)
                ev[i][1].record()
        torch.cuda.synchronize()
    return [summarize_times([s.elapsed_time(e) for s, e in ev]) for ev in events]


def summarize_times(samples):
    times = sorted(samples)
    n = len(times)
    median = times[n // 2] if n % 2 else (times[n // 2 - 1] + times[n // 2]) / 2
    return {"median_ms": median, "min_ms": times[0], "max_ms": times[-1],
            "p10_ms": times[n // 10], "p90_ms": times[(9 * n) // 10], "repeats": n,
            "samples_ms": [round(t, 4) for t in samples]}


# ---------------------------------------------------------------- rank


def time_interleaved(models, inputs, args, gpu):
    """Times several models in turn, one call each per round, under one clock:
    CUDA events after a 256 MB flush on the GPU, host wall time under the CPU
    interpreter (where it measures the interpreter, not a GPU)."""
    import torch

    rounds = max(3, args.repeats if gpu else 3)
    samples = [[] for _ in models]
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda") if gpu else None
    with torch.no_grad():
        for model in models:
            for _ in range(args.warmup if gpu else 1):
                model(*inputs)
        if gpu:
            torch.cuda.synchronize()
        for _ in range(rounds):
            for model, out in zip(models, samples):
                if gpu:
                    flush.zero_()
                    torch.cuda.synchronize()
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    model(*inputs)
                    end.record()
                    torch.cuda.synchronize()
                    out.append(start.elapsed_time(end))
                else:
                    t0 = time.perf_counter()
                    model(*inputs)
                    out.append((time.perf_counter() - t0) * 1000)
    return [summarize_times(t) for t in samples]


def run_ranking(args, mode, result):
    """The rewrite pipeline's final ranking: the reference, the current file
    (--candidate) and each --rank file, built as the correctness check builds
    them and timed interleaved in this one process, so every ratio compares
    times taken side by side."""
    import torch

    device = "cuda" if mode == "gpu" else "cpu"
    dtype = task_dtype(args)
    overrides, used = parse_overrides(args.set), set()
    candidate = os.path.abspath(args.candidate)
    ref_path, how = find_reference(candidate, args.reference, args.config_reference)
    timers = timer_objects()
    ref_mod = load_module(ref_path or candidate, "kernel_lsp_reference", overrides, used, isolated=True)
    entries = [{"file": candidate, "role": "current"}] + [{"file": os.path.abspath(f), "role": "candidate"}
                                                           for f in args.rank]
    models, timed = [], []
    for entry in entries:
        try:
            mod = load_module(entry["file"], "kernel_lsp_ranked", overrides, used, isolated=True)
            ref, new = build_models_kb(ref_mod, mod, device, dtype, args.seed)
        except BenchFailure as f:
            entry["error"] = f.info["message"]
            continue
        except Exception as e:
            entry["error"] = "".join(traceback.format_exception_only(type(e), e)).strip()
            continue
        # A file that replaced a clock spoils every figure of this process: no ranking at all.
        check_timers(timers, f"when {os.path.basename(entry['file'])} was loaded", (entry["file"], 1, 1))
        if not models:
            models.append(ref)
            timed.append({"file": ref_path or candidate, "role": "reference"})
        models.append(new)
        timed.append(entry)
    entries.insert(0, timed[0] if timed and timed[0]["role"] == "reference" else
                   {"file": ref_path or candidate, "role": "reference", "error": "no model could be built"})
    if len(models) > 1:
        inputs = task_inputs(ref_mod, ref_mod, device, dtype, args.seed)
        with torch.no_grad():
            for m in models:
                m(*inputs)
        check_timers(timers, "while the ranked models ran once", (candidate, 1, 1))
        progress("timing", f"{len(models)} models interleaved")
        for entry, stats in zip(timed, time_interleaved(models, inputs, args, mode == "gpu")):
            entry["ms"] = stats["p10_ms"]
            entry["timing"] = stats
    result["ranking"] = entries
    result["ranking_clock"] = ("cuda events, interleaved, p10" if mode == "gpu"
                               else "host wall time under the CPU interpreter, interleaved (not a GPU figure)")
    return result


# ---------------------------------------------------------------- count_launches


class LaunchRecorder:
    """Wraps Triton's launch entry (JITFunction.run, or the interpreter's) to count
    launches per kernel and keep the compiled kernel each launch used."""

    def __init__(self):
        self.active = False
        self.counts = {}
        self.compiled = {}
        self.functions = {}
        self.originals = []
        # While a launch runs (the interpreter moves tensors with ATen ops of
        # its own): the forward watch does not count those.
        self.launching = 0
        # (thread id, CUDA stream handle or None) of each watched launch.
        self.places = []
        # (kernel, dtype) of each watched launch given a fp16/bf16 tensor.
        self.half_args = []

    def install(self):
        import triton.runtime.jit as jit

        classes = [jit.JITFunction]
        if os.environ.get("TRITON_INTERPRET") == "1":
            from triton.runtime.interpreter import InterpretedFunction
            classes.append(InterpretedFunction)
        for cls in classes:
            original = cls.run

            def run(fn, *a, _original=original, **kw):
                if self.active and not kw.get("warmup", False):
                    self.places.append((threading.get_ident(), current_stream_handle()))
                    for x in list(a) + list(kw.values()):
                        dtype = str(getattr(x, "dtype", ""))
                        if dtype in ("torch.float16", "torch.bfloat16"):
                            self.half_args.append((getattr(fn, "__name__", "kernel"), dtype.replace("torch.", "")))
                            break
                self.launching += 1
                try:
                    result = _original(fn, *a, **kw)
                finally:
                    self.launching -= 1
                if self.active and not kw.get("warmup", False):
                    key = id(fn)
                    self.functions[key] = fn
                    self.counts[key] = self.counts.get(key, 0) + 1
                    if result is not None and hasattr(result, "metadata"):
                        self.compiled[key] = result
                return result

            self.originals.append((cls, original))
            cls.run = run

    def uninstall(self):
        """Puts Triton's own launch entries back: the wrapper costs about 1.5 us a
        launch, which a model launching thousands of kernels a forward would pay
        while it is timed."""
        for cls, original in reversed(self.originals):
            cls.run = original
        self.originals = []

    def record(self, call):
        self.active, self.counts = True, {}
        try:
            call()
        finally:
            self.active = False
        return sum(self.counts.values())


def count_cuda_kernels(model, inputs):
    """Exact count of every CUDA kernel one forward launches, from the profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
        model(*inputs)
        torch.cuda.synchronize()
    cuda = torch.autograd.DeviceType.CUDA
    try:  # the raw events: building prof.events() costs seconds for thousands of launches
        raw = prof.profiler.kineto_results.events()
        names = [e.name() for e in raw if e.device_type() == cuda]
    except AttributeError:
        names = [e.name for e in prof.events() if e.device_type == cuda]
    kernels = [n for n in names if not n.startswith(("Memcpy", "Memset"))]
    return len(kernels) or None


# ---------------------------------------------------------------- kernel_stats


def kernel_source(fn):
    """(file, absolute line of `def`, indentation) of a @triton.jit function."""
    inner = getattr(fn, "fn", fn)
    while hasattr(inner, "fn") and not inspect.isfunction(inner):
        inner = inner.fn
    lines, start = inspect.getsourcelines(inner)
    for i, text in enumerate(lines):
        if text.lstrip().startswith("def "):
            return real_path(inspect.getsourcefile(inner)), start + i, len(text) - len(text.lstrip())
    return real_path(inspect.getsourcefile(inner)), start, 0


def kernel_stats(recorder):
    out = []
    for key, fn in recorder.functions.items():
        k = recorder.compiled.get(key)
        meta = getattr(k, "metadata", None)
        entry = {"name": getattr(getattr(fn, "fn", fn), "__name__", str(fn)),
                 "launches": recorder.counts.get(key, 0),
                 "registers": getattr(k, "n_regs", None), "spills": getattr(k, "n_spills", None),
                 "shared": getattr(meta, "shared", None), "num_warps": getattr(meta, "num_warps", None),
                 "num_stages": getattr(meta, "num_stages", None)}
        try:
            entry["file"], entry["line"], _ = kernel_source(fn)
        except (OSError, TypeError):
            pass
        out.append(entry)
    return out


# ---------------------------------------------------------------- locate_error


def exception_chain(exc):
    seen = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def innermost_frame(exc, path):
    """(line, column) of the innermost traceback frame in `path`, 1-based."""
    best = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if real_path(frame.filename) == path:
            best = frame
    if best is None:
        return None, None
    col = getattr(best, "colno", None)
    return best.lineno, (col + 1) if col is not None else None


def kernel_names(module):
    """Names of the module's Triton kernels (jit, autotuned, heuristics; compiled or interpreted)."""
    names = set()
    for value in vars(module).values():
        if not (type(value).__module__ or "").startswith("triton") or not hasattr(value, "fn"):
            continue
        fn = value
        while hasattr(fn, "fn") and fn.fn is not fn:
            fn = fn.fn
        if getattr(fn, "__module__", None) == module.__name__ or callable(fn):
            names.add(getattr(fn, "__name__", "kernel"))
    return sorted(names)


def jit_functions(module):
    import triton

    found = []
    for value in vars(module).values():
        fn = value
        while fn is not None and not isinstance(fn, triton.runtime.JITFunction) and hasattr(fn, "fn"):
            fn = fn.fn
        if fn is not None and hasattr(fn, "fn") and hasattr(fn, "src"):
            found.append(fn)
    return found


def locate_compile_error(err, modules):
    """Triton's `at L:C:` counts lines from the kernel's `def` (line 1) and columns in
    the dedented source; finds that kernel by its source and returns absolute (file, line, col)."""
    m = re.search(r"at (\d+):(\d+):", str(err))
    if not m:
        return None
    rel_line, rel_col = int(m.group(1)), int(m.group(2))
    for module in modules:
        for fn in jit_functions(module):
            src = getattr(fn, "src", None)
            if err.src is not None and src is not None and src.strip() == err.src.strip():
                file, def_line, indent = kernel_source(fn)
                return os.path.abspath(file), def_line + rel_line - 1, indent + rel_col + 1
    return None


def locate_error(exc, candidate, modules):
    """Maps any exception from user code to a kind and a place in the candidate."""
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import OutOfResources

    try:
        from triton.runtime.errors import InterpreterError
    except ImportError:
        InterpreterError = ()
    chain = exception_chain(exc)
    message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    for e in chain:
        if isinstance(e, CompilationError):
            place = locate_compile_error(e, modules)
            if place:
                return BenchFailure("compile-error", str(e).strip(), *place)
            return BenchFailure("compile-error", str(e).strip(), candidate, *innermost_frame(exc, candidate))
        if isinstance(e, OutOfResources):
            return BenchFailure("out-of-resources", str(e).strip(), candidate, *innermost_frame(exc, candidate))
        if InterpreterError and isinstance(e, InterpreterError) and e.__cause__ is not None:
            # Under the interpreter the kernel body runs as Python: what would be a
            # compile error on the GPU raises in the kernel's own frame.
            cause = e.__cause__
            line, col = innermost_frame(cause, candidate)
            if line is None:
                line, col = innermost_frame(exc, candidate)
            text = "".join(traceback.format_exception_only(type(cause), cause)).strip()
            return BenchFailure("compile-error", f"{text} (under the Triton interpreter)", candidate, line, col)
    line, col = innermost_frame(exc, candidate)
    return BenchFailure("exception", message, candidate, line, col,
                        traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:])


# ---------------------------------------------------------------- run


class Phases:
    """Wall seconds per step, so a caller can tell the kernels' time from the overhead."""

    def __init__(self):
        self.seconds = {}
        self.started = time.perf_counter()

    def __call__(self, name):
        now = time.perf_counter()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self.started, 4)
        self.started = now


def timer_objects():
    """The clocks and timing functions a figure depends on, by name: the objects
    themselves, so that a replacement is seen by identity, whatever its name."""
    import torch

    out = {f"time.{n}": getattr(time, n) for n in ("perf_counter", "perf_counter_ns", "time", "monotonic")}
    cuda = torch.cuda
    out.update({"torch.cuda.synchronize": cuda.synchronize, "torch.cuda.Event": cuda.Event,
                "torch.cuda.current_stream": cuda.current_stream})
    for n in ("record", "elapsed_time", "synchronize"):
        out[f"torch.cuda.Event.{n}"] = getattr(cuda.Event, n, None)
    try:
        import triton.testing

        out["triton.testing.do_bench"] = getattr(triton.testing, "do_bench", None)
    except ImportError:
        pass
    me = sys.modules[__name__]
    for n in ("time_models", "kernelbench_timing", "check_correctness_kb", "check_determinism", "emit",
              "timer_objects", "check_timers", "watch_forward", "forward_watch", "op_work", "candidate_line"):
        out[f"the harness's {n}"] = getattr(me, n, None)
    return out


def check_timers(before, when, where):
    """Raises `timer-patch` (KL107) when a clock or timing function is no longer the object it was."""
    now = timer_objects()
    changed = sorted(n for n, obj in before.items() if now.get(n) is not obj)
    if changed:
        raise BenchFailure(
            "timer-patch",
            f"{', '.join(changed)} {'was' if len(changed) == 1 else 'were'} replaced {when}: a figure timed "
            f"with {'it' if len(changed) == 1 else 'them'} would not be a time. The candidate's speed is not "
            f"measured; KernelBench does not count a candidate that patches its timer.",
            *where, replaced=changed)


def model_new_line(candidate):
    m = re.search(r"^class\s+ModelNew\b", read_text(candidate), re.MULTILINE)
    return (read_text(candidate)[: m.start()].count("\n") + 1) if m else 1


def run_benchmark(args, mode):
    """One full run; returns the result object (without "type")."""
    import torch
    import triton

    candidate = os.path.abspath(args.candidate)
    result = {"mode": mode, "correct": None, "speedup": None, "ref_ms": None, "new_ms": None,
              "launches_per_forward": None, "kernels": [], "device": None, "error": None,
              "candidate": candidate, "torch": torch.__version__, "triton": triton.__version__,
              "python": platform.python_version(), "worker_pid": args.worker_pid, "pid": os.getpid()}
    device = "cuda" if mode == "gpu" else "cpu"
    result["device"] = torch.cuda.get_device_name() if mode == "gpu" else f"cpu ({platform.machine()})"
    recorder = LaunchRecorder()
    recorder.install()
    modules = []
    phase = Phases()
    result["phase_s"] = phase.seconds
    if args.rank:
        try:
            return run_ranking(args, mode, result)
        except BenchFailure as f:
            result["error"] = f.info
            return result
        except Exception as e:
            result["error"] = locate_error(e, candidate, modules).info
            return result
    try:
        overrides = parse_overrides(args.set)
        used = set()
        progress("load", "finding the reference")
        ref_path, how = find_reference(candidate, args.reference, args.config_reference)
        result["reference"], result["reference_found_by"] = ref_path or candidate, how
        timers = timer_objects()
        # Both profiles load the candidate as KernelBench does: from its source alone.
        new_mod = load_module(candidate, "kernel_lsp_candidate", overrides, used, isolated=True)
        check_timers(timers, "when the candidate was imported", (candidate, 1, 1))
        modules.append(new_mod)
        ref_mod = new_mod if ref_path is None else load_module(ref_path, "kernel_lsp_reference", overrides, used,
                                                               isolated=True)
        unused = sorted(set(overrides) - used)
        if unused:
            result["overrides_unused"] = unused
            files = " or ".join(dict.fromkeys(os.path.basename(p) for p in (candidate, ref_path or candidate)))
            raise BenchFailure(
                "unknown-override",
                f"--set {', '.join(unused)}: no top-level `NAME = ...` of that name in {files}; "
                f"names it can set: {', '.join(settable_names([candidate, ref_path or candidate])) or 'none'}",
                candidate, 1, 1)
        phase("load")
        dtype = task_dtype(args)
        if mode != "gpu" and not args.full_size:
            check_interpreter_size(ref_mod, new_mod, dtype, (candidate, model_new_line(candidate), 1))
        progress("build", "building Model and ModelNew")
        where = (candidate, model_new_line(candidate), 1)
        ref, new = build_models_kb(ref_mod, new_mod, device, dtype, args.seed)
        check_timers(timers, "when ModelNew was built", where)
        phase("build")
        check = {}
        try:
            result["max_abs_diff"] = check_correctness_kb(ref, new, ref_mod, new_mod, device, args, where, check)
        except BenchFailure as failed:
            if failed.info["kind"] == "mismatch":
                # Say why where the run can see it: a wrong output from a
                # precision drop or PyTorch's own result is that finding.
                result.update(check)
                explain_mismatch(failed, ref, new, ref_mod, new_mod, device, dtype, args, recorder, candidate,
                                 where, kernel_names(new_mod))
            raise
        finally:
            result.update(check)
        # Checked before any figure is taken: a forward may patch as it runs.
        check_timers(timers, "while ModelNew.forward ran", where)
        phase("correctness")
        (_, atol, rtol), _ = tolerances(args)
        args.atol, args.rtol = atol, rtol
        result["bitwise_deterministic"] = check_determinism(new, ref_mod, new_mod, device, args, where)
        phase("determinism")
        result["correct"] = True
        inputs = task_inputs(ref_mod, new_mod, device, dtype, args.seed)
        if mode == "gpu" and not args.no_kernelbench_timing:
            # KernelBench times right after its correctness trials, in a process
            # that has done nothing else: do the same, before the watch, the
            # launch hook, the interleaved timing and the profiler touch the
            # process, and without the hook (about 1.5 us a launch). A run the
            # watch flags next keeps this figure: KernelBench counts it.
            recorder.uninstall()
            kernelbench_timing(ref, new, inputs, result)
            recorder.install()
            check_timers(timers, "while ModelNew.forward ran", where)
            phase("kernelbench-timing")
        # What ran, judged by watching it: never timed, on the first trial's inputs again.
        progress("watch", "watching one forward of each model")
        first = task_inputs(ref_mod, new_mod, device, dtype, derive_trial_seeds(args.seed, args.trials)[0])
        result["watch"] = watch_forward(ref, new, first, recorder, candidate, dtype, where, kernel_names(new_mod),
                                        args.strict, (args.atol, args.rtol))
        del first
        check_timers(timers, "while ModelNew.forward ran", where)
        phase("watch")
        with torch.no_grad():
            result["triton_launches_per_forward"] = recorder.record(lambda: new(*inputs))
        result["launches_per_forward"] = result["triton_launches_per_forward"]
        names = kernel_names(new_mod)
        if names and not result["triton_launches_per_forward"]:
            # The timed inputs' forward too: a candidate may stop launching after some calls.
            raise never_launched(names, where)
        result["launch_count_source"] = "triton-hook"
        result["kernels"] = kernel_stats(recorder)
        phase("launches")
        if mode != "gpu":
            for key in ("kernelbench_speedup", "graph_speedup"):
                result[key] = None
            result["kernelbench_timing"] = ("not measured: the CPU interpreter has no CUDA events; "
                                            "KernelBench times on a GPU")
        if mode == "gpu":
            # Time before profiling: once CUPTI is attached, every launch costs more,
            # which skews launch-bound models (a Python time loop, cuDNN's GRU).
            recorder.uninstall()
            t_ref, t_new = time_models(ref, new, inputs, args)
            # The 10th percentile, not the median: a launch-bound model (cuDNN's GRU,
            # a Python time loop) runs in phases of several seconds where the host
            # issues launches 40-50% slower, and a median or mean takes in however
            # many repeats fell into one; GPU-bound models have p10 = median to 1%.
            result["timing_method"], result["timing_statistic"] = "interleaved", "p10"
            result["ref_ms"], result["new_ms"] = t_ref["p10_ms"], t_new["p10_ms"]
            result["ref_timing"], result["new_timing"] = t_ref, t_new
            result["speedup"] = t_ref["p10_ms"] / t_new["p10_ms"] if t_new["p10_ms"] > 0 else None
            phase("timing")
            if not args.no_profiler:
                progress("launches", "counting kernel launches")
                try:
                    counted = count_cuda_kernels(new, inputs)
                except Exception as e:  # the profiler (CUPTI) may be unavailable
                    result["profiler_error"] = str(e)
                else:
                    if counted:
                        result["launches_per_forward"], result["launch_count_source"] = counted, "profiler"
                phase("profiler")
    except BenchFailure as f:
        result["error"] = f.info
        incorrect = f.extra.pop("incorrect", False)
        result.update(f.extra)
        if incorrect or f.info["kind"] in ("mismatch", "nondeterministic", "non-tensor-output", "local-import"):
            result["correct"] = False
    except Exception as e:
        f = locate_error(e, candidate, modules)
        result["error"] = f.info
        result.update(f.extra)
    return result


def parse_run_args(argv):
    p = argparse.ArgumentParser(prog="harness.py run")
    p.add_argument("--candidate", required=True)
    p.add_argument("--reference")
    p.add_argument("--config-reference")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--cpu", action="store_true")
    p.add_argument("--strict", action="store_true",
                   help="LLM-written code: the run's findings ignore `# kernel-lsp: ignore` comments")
    p.add_argument("--full-size", action="store_true",
                   help="on the CPU interpreter, run at the task's sizes even where the size guard refuses them")
    p.add_argument("--profile", choices=["kernelbench", "legacy", "custom"], default="kernelbench",
                   help="kernelbench: KernelBench main's tolerance for the precision; legacy: --atol/--rtol; "
                        "custom: atol = rtol = --tolerance")
    p.add_argument("--tolerance", type=float, default=None)
    p.add_argument("--precision", choices=sorted(PRECISION_TOLERANCE), default="fp32")
    p.add_argument("--atol", type=float, default=1e-2, help="the legacy profile's atol")
    p.add_argument("--rtol", type=float, default=1e-2, help="the legacy profile's rtol")
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--no-kernelbench-timing", action="store_true")
    p.add_argument("--rank", action="append", default=[], metavar="FILE",
                   help="time the current file (--candidate), the reference and these files interleaved; no checks")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--repeats", type=int, default=50)
    p.add_argument("--time-budget", type=float, default=10.0, help="seconds of timing per model at most")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--worker-pid", type=int)
    p.add_argument("--no-profiler", action="store_true", help="count Triton launches only: attaching CUPTI costs seconds, and the runner may know the count")
    return p.parse_args(argv)


def run_once(argv, mode=None):
    """The body of one run, in the process that will run user code."""
    try:
        args = parse_run_args(argv)
    except SystemExit:
        emit({"type": "result", "mode": mode or "none", "correct": None, "speedup": None, "error":
              {"kind": "harness", "message": f"bad harness arguments: {argv}", "file": None,
               "line": None, "column": None}})
        return
    emit({"type": "started", "pid": os.getpid()})
    try:
        mode = mode or import_torch_and_triton(args.cpu)
    except BenchFailure as f:
        emit({"type": "result", "mode": "none", "correct": None, "speedup": None, "ref_ms": None,
              "new_ms": None, "launches_per_forward": None, "kernels": [], "device": None, "error": f.info})
        return
    try:
        result = run_benchmark(args, mode)
    finally:
        remove_temp_folders()
    emit({"type": "result", **result})


def serve(cpu):
    """Warm worker: imports once, forks one child per request."""
    try:
        mode = import_torch_and_triton(cpu)
    except BenchFailure as f:
        emit({"type": "error", **f.info})
        return
    emit({"type": "ready", "pid": os.getpid(), "mode": mode})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            argv = json.loads(line)["argv"]
        except (ValueError, KeyError, TypeError):
            emit({"type": "error", "kind": "harness", "message": f"bad request: {line[:200]}"})
            continue
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.setpgid(0, 0)  # the runner kills the child's whole group on timeout
                run_once(argv + ["--worker-pid", str(os.getppid())] + (["--cpu"] if mode != "gpu" else []), mode)
            except BaseException:
                code = 1
                traceback.print_exc()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        emit({"type": "done", "pid": pid, "status": status})


def main():
    protect_protocol()
    if len(sys.argv) >= 2 and sys.argv[1] == "serve":
        serve("--cpu" in sys.argv[2:])
    elif len(sys.argv) >= 2 and sys.argv[1] == "run":
        run_once(sys.argv[2:])
    else:
        emit({"type": "error", "kind": "harness", "message": "usage: harness.py run|serve ..."})


if __name__ == "__main__":
    main()
