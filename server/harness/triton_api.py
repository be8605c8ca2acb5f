"""Prints the API of the installed `triton.language` as one JSON object.

kernel-lsp runs this in the user's configured Python (never with user code)
and caches the answer per Triton version; hover, signature help and
completion read it. `--version` prints only the installed version, without
importing Triton, so that a cached database is found cheaply. The same
script generates the database embedded in the binary:

    python server/harness/triton_api.py > server/data/triton_api.json

Each entry: the name as written after `tl.` (`load`, `math.exp`,
`extra.libdevice.tanh`), the module it is defined in, its kind, its
parameters (name, default as source text, kind) without Triton's internal
`_semantic`/`_builder`/`_generator` ones, and its docstring.
"""
import inspect
import json
import sys

HIDDEN = ("_semantic", "_builder", "_generator")
DOC_LIMIT = 4000


def installed_version():
    from importlib import metadata

    return metadata.version("triton")


def describe_params(obj):
    target = getattr(obj, "fn", obj)  # a JITFunction wraps the Python function
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    params = []
    for p in sig.parameters.values():
        if p.name in HIDDEN:
            continue
        entry = {"name": p.name, "kind": p.kind.name.lower()}
        if p.default is not inspect.Parameter.empty:
            entry["default"] = repr(p.default)
        params.append(entry)
    return params


def kind_of(obj):
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "value"


def describe(name, obj):
    doc = inspect.getdoc(getattr(obj, "fn", obj)) if kind_of(obj) != "value" else None
    module = getattr(getattr(obj, "fn", obj), "__module__", None) or ""
    entry = {"name": name, "module": module, "kind": kind_of(obj)}
    if entry["kind"] != "value":
        params = describe_params(obj)
        if params is not None:
            entry["params"] = params
    if doc and not (entry["kind"] == "class" and doc == inspect.getdoc(type)):
        entry["doc"] = doc[:DOC_LIMIT]
    return entry


def public(module):
    return sorted(n for n in dir(module) if not n.startswith("_"))


def walk(prefix, module, out):
    for name in public(module):
        obj = getattr(module, name, None)
        if inspect.ismodule(obj):
            continue
        out.append(describe(prefix + name, obj))


def main():
    if sys.argv[1:] == ["--version"]:
        print(installed_version())
        return
    import triton
    import triton.language as tl

    out = []
    walk("", tl, out)
    walk("math.", tl.math, out)
    try:
        from triton.language.extra import libdevice

        walk("extra.libdevice.", libdevice, out)
    except ImportError:
        pass
    json.dump({"version": triton.__version__, "entries": out}, sys.stdout, indent=0, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
