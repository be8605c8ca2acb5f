"""How plain tree-sitter's reparse of one keystroke grows with the block it
is in: a method's body, and the methods after it in the same class.

    python -m venv /tmp/tsvenv && /tmp/tsvenv/bin/pip install tree-sitter tree-sitter-python
    /tmp/tsvenv/bin/python scripts/ts_block_reparse.py

Two files with the same code: a class `Model` whose `__init__` (two
statements) comes before a `forward` of N call statements, and the same
two functions at module level. A space is typed at the end of an
identifier and deleted, in turn, 300 reparses from the last tree, p50 in us:
in `__init__`'s first statement; in a statement added at the end of
`__init__` (the line just before `forward`); in `forward`'s first statement
and in its middle one. No syntax error is made. docs/performance.md (stop
57) has the figures and what they mean for typing in a KernelBench `forward`.
"""

import ts_reparse_scaling
from ts_reparse_scaling import LANGUAGE
from tree_sitter import Parser


def source(n, in_class):
    pad = "    " if in_class else ""
    init = [f"{pad}def __init__(self):", f"{pad}    self.w = 1", f"{pad}    self.b = 0", ""]
    forward = [f"{pad}def forward(self, x, h):"]
    forward += [f"{pad}    h = run{i}(x, h)" for i in range(n)]
    forward += [f"{pad}    return h", ""]
    head = ["import torch", "", ""] + (["class Model(torch.nn.Module):"] if in_class else [])
    return "\n".join(head + init + forward).encode()


def keystrokes(text, at):
    """A space typed at `at` and deleted, in turn (`ts_reparse_scaling.keystrokes`); the p50 in us."""
    parser = Parser(LANGUAGE)
    tree = parser.parse(text)
    assert not tree.root_node.has_error
    return ts_reparse_scaling.keystrokes(text, at, tree, lambda t, old, _: parser.parse(t, old), rounds=300)


def after(text, anchor):
    return text.index(anchor.encode()) + len(anchor)


def with_last_line(n, in_class):
    """The file with `z = x` added as `__init__`'s last statement, and the offset after it."""
    text = source(n, in_class)
    at = after(text, "self.b = 0")
    line = b"\n" + (b"        " if in_class else b"    ") + b"z = x"
    return text[:at] + line + text[at:], at + len(line)


def main():
    keystrokes(*with_last_line(100, True))  # warm-up: the first parses of a process are slower
    print("N statements in `forward` | where the space is typed: us in a class / at module level (p50)")
    for n in (25, 50, 100, 200, 400):
        row = []
        for where, anchor in (("__init__", "self.w"), ("end of __init__", None), ("forward, first", "h = run0"), ("forward, middle", f"h = run{n // 2}")):
            figures = []
            for in_class in (True, False):
                text = source(n, in_class)
                text, at = with_last_line(n, in_class) if anchor is None else (text, after(text, anchor))
                figures.append(keystrokes(text, at))
            row.append(f"{where}: {figures[0]:6.1f} / {figures[1]:6.1f}")
        print(f"{n:4d} | " + " | ".join(row))


if __name__ == "__main__":
    main()
