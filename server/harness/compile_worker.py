"""kernel-lsp compile worker: the user's own Triton compiles kernels from their source.

Shipped inside the kernel-lsp binary, started once in the user's Python (in the
same sandbox as untrusted code) and kept warm. Imports nothing outside triton
and the standard library; never imports the user's module and never runs host
code: the server sends only the text it extracted from the file (the jit
functions, the module constants and imports they read), every other character
blanked, so each kept piece sits at its own line and column.

Protocol: one JSON request per line on stdin, one JSON reply per line on stdout,
with the request's "id". Anything the compiler prints goes to stderr.
  {"type": "hello"}  -> {"ok": true, "triton": VERSION, "python": VERSION, "capability": [9, 0] or null}
  {"type": "parse", "source": TEXT}
                     -> {"ok": true, "valid": bool, "line": L, "column": C, "message": M}
  {"type": "compile", "source": TEXT, "filename": NAME, "kernel": NAME,
   "signature": {param: "*fp16" | "i32" | "fp32" | "constexpr" ...},
   "constexprs": {param: value}, "divisible": [param, ...],
   "options": {"num_warps": 4, "num_stages": 3},
   "target": {"backend": "cuda", "arch": 90, "warp_size": 32}}
                     -> {"ok": true, "status": "compiled", "resources": {...}, "triton": VERSION}
                      | {"ok": true, "status": "error", "error": {"type", "message", "line", "column", "function"}, ...}
A request the worker cannot serve at all answers {"ok": false, "message": ...}.
Lines and columns are 1-based, in the user's file.
"""

import ast
import json
import linecache
import os
import re
import subprocess
import sys
import tempfile
import traceback

PROTOCOL_FD = 1


def emit(obj):
    data = (json.dumps(obj, default=str) + "\n").encode()
    while data:
        data = data[os.write(PROTOCOL_FD, data):]


def protect_protocol():
    """fd 1 becomes stderr (the compiler and its tools may print); replies go to a saved fd."""
    global PROTOCOL_FD
    sys.stdout.flush()
    PROTOCOL_FD = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr


# ---------------------------------------------------------------- hello and parse


def hello(_req):
    import triton

    return {"ok": True, "triton": triton.__version__, "python": sys.version.split()[0],
            "capability": gpu_capability()}


def gpu_capability():
    """The capability of the GPU this machine has, asked of Triton's driver; None without one."""
    try:
        from triton.runtime import driver

        target = driver.active.get_current_target()
        arch = int(target.arch)
        return [arch // 10, arch % 10]
    except Exception:
        return None


def parse(req):
    try:
        ast.parse(req["source"])
        return {"ok": True, "valid": True}
    except SyntaxError as e:
        return {"ok": True, "valid": False, "line": e.lineno, "column": e.offset, "message": e.msg}
    except ValueError as e:  # NUL bytes
        return {"ok": True, "valid": False, "line": None, "column": None, "message": str(e)}


# ---------------------------------------------------------------- compile


def build_namespace(source, filename):
    """Runs the extracted text (never the user's file) as a module of its own.
    linecache holds the text so that Triton's `inspect.getsource` finds each function."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": "kernel_lsp_bundle", "__file__": filename}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def jit_functions(namespace):
    import triton

    found = []
    for value in namespace.values():
        fn = value
        while fn is not None and not isinstance(fn, triton.runtime.JITFunction) and hasattr(fn, "fn"):
            fn = fn.fn
        if isinstance(fn, triton.runtime.JITFunction):
            found.append(fn)
    return found


def def_line(fn, lines):
    """(1-based line, indent) of the `def` of a jit function in the bundle's lines."""
    first = fn.fn.__code__.co_firstlineno
    for i in range(first - 1, len(lines)):
        stripped = lines[i].lstrip()
        if stripped.startswith("def ") or stripped.startswith("async def "):
            return i + 1, len(lines[i]) - len(stripped)
    return first, 0


def owner(err, namespace):
    """The bundle's jit function whose source a CompilationError carries, if it is one of them."""
    src = getattr(err, "src", None)
    for fn in jit_functions(namespace):
        if src is not None and fn.src.strip() == src.strip():
            return fn
    return None


def locate(err, kernel, namespace, lines):
    """Triton's `at L:C:` counts from the `def` of the function whose source it
    carries (line 1) and columns in its dedented source: back to the file."""
    m = re.match(r"at (\d+):(\d+):", str(err))
    fn = owner(err, namespace) or kernel
    line, indent = def_line(fn, lines)
    if not m:
        return fn.__name__, line, indent + 1
    return fn.__name__, line + int(m.group(1)) - 1, indent + int(m.group(2)) + 1


def error_message(err):
    """Triton's own sentence, without the source excerpt it prints above it."""
    message = getattr(err, "error_message", None)
    if message:
        return str(message).strip()
    text = str(err).strip()
    return text.splitlines()[-1] if text else type(err).__name__


def compile_kernel(req):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.errors import CompilationError

    filename = req.get("filename") or "<kernel-lsp bundle>"
    source = req["source"]
    lines = source.splitlines()
    base = {"ok": True, "triton": triton.__version__}
    try:
        namespace = build_namespace(source, filename)
    except Exception as e:
        line, column = bundle_place(e, filename)
        return dict(base, status="bundle-error",
                    error={"type": type(e).__name__, "message": f"{type(e).__name__}: {e}", "line": line,
                           "column": column, "function": None})
    kernel = namespace.get(req["kernel"])
    while kernel is not None and not isinstance(kernel, triton.runtime.JITFunction) and hasattr(kernel, "fn"):
        kernel = kernel.fn
    if not isinstance(kernel, triton.runtime.JITFunction):
        return {"ok": False, "message": f"`{req['kernel']}` is not a @triton.jit function in the bundle"}
    signature = dict(req["signature"])
    constexprs = {name: constant(v) for name, v in (req.get("constexprs") or {}).items()}
    for name in constexprs:
        signature[name] = "constexpr"
    index = {name: i for i, name in enumerate(kernel.arg_names)}
    attrs = {(index[n],): [["tt.divisibility", 16]] for n in req.get("divisible") or [] if n in index}
    t = req.get("target") or {}
    target = GPUTarget(t.get("backend", "cuda"), int(t.get("arch", 90)), int(t.get("warp_size", 32)))
    options = {k: v for k, v in (req.get("options") or {}).items() if v is not None}
    try:
        compiled = triton.compile(ASTSource(kernel, signature, constexprs, attrs), target=target, options=options)
    except CompilationError as e:
        # An error inside a helper comes wrapped in one at each call site: the innermost names the
        # cause, the innermost in the user's own functions is the place (`tl.max` and the rest of
        # Triton's standard library are jit functions too, whose lines are not the user's).
        chain = [e]
        while isinstance(chain[-1].__cause__, CompilationError):
            chain.append(chain[-1].__cause__)
        own = [c for c in chain if owner(c, namespace) is not None]
        function, line, column = locate(own[-1] if own else e, kernel, namespace, lines)
        return dict(base, status="error",
                    error={"type": type(e).__name__, "message": error_message(chain[-1]), "line": line,
                           "column": column, "function": function})
    except Exception as e:
        # Not a CompilationError: the signature we were given, ptxas, or Triton itself.
        line, indent = def_line(kernel, lines)
        text = "".join(traceback.format_exception_only(type(e), e)).strip()
        return dict(base, status="failure",
                    error={"type": type(e).__name__, "message": text[-2000:], "line": line, "column": indent + 1,
                           "function": kernel.__name__})
    return dict(base, status="compiled", resources=resources(compiled))


def constant(value):
    """A constexpr as JSON carries it; `{"tl": "float16"}` is `tl.float16`."""
    if isinstance(value, dict) and "tl" in value:
        import triton.language as tl

        return getattr(tl, value["tl"])
    return value


def bundle_place(exc, filename):
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename == filename:
            col = getattr(frame, "colno", None)
            return frame.lineno, (col + 1) if col is not None else None
    if isinstance(exc, SyntaxError):
        return exc.lineno, exc.offset
    return None, None


def resources(compiled):
    md = compiled.metadata
    out = {"shared": int(getattr(md, "shared", 0) or 0), "num_warps": md.num_warps, "num_stages": md.num_stages,
           "name": md.name}
    cubin = compiled.asm.get("cubin")
    if cubin:
        out.update(cubin_usage(cubin, md.name))
    return out


USAGE = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")


def cubin_usage(cubin, name):
    """Registers per thread, stack, static shared and local memory, as `cuobjdump -res-usage` reads the cubin.
    n_spills is what Triton's driver reports, local bytes per thread / 4, where the kernel has no stack frame."""
    try:
        from triton import knobs

        tool = knobs.nvidia.cuobjdump.path
    except Exception:
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        try:
            out = subprocess.run([tool, "-res-usage", path], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            return {}
    block = out.split(f"Function {name}:", 1)
    m = USAGE.search(block[1] if len(block) == 2 else out)
    if not m:
        return {}
    regs, stack, static_shared, local = (int(g) for g in m.groups())
    # The driver's figure (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES / 4) counts spills kept in the stack
    # frame, which the cubin does not break down: with a frame, the spills are not known here.
    spills = local // 4 if stack == 0 else None
    return {"n_regs": regs, "n_spills": spills, "local": local, "stack": stack, "static_shared": static_shared}


# ---------------------------------------------------------------- serve


HANDLERS = {"hello": hello, "parse": parse, "compile": compile_kernel}


def serve():
    protect_protocol()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except ValueError as e:
            emit({"ok": False, "message": f"not a JSON request: {e}"})
            continue
        handler = HANDLERS.get(req.get("type"))
        try:
            reply = handler(req) if handler else {"ok": False, "message": f"unknown request {req.get('type')!r}"}
        except ImportError as e:
            reply = {"ok": False, "message": f"Triton cannot be imported in {sys.executable}: {e}"}
        except Exception as e:
            reply = {"ok": False, "message": "".join(traceback.format_exception_only(type(e), e)).strip()}
        reply["id"] = req.get("id")
        emit(reply)


if __name__ == "__main__":
    # Triton 3.9 warns that this default changes in 3.10; keep 3.9's behaviour, which a launch gets too.
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    serve()
