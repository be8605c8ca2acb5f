"""How plain tree-sitter's reparse of one keystroke grows with a file's
top-level statements, and what the edited statement alone costs.

    python -m venv /tmp/tsvenv && /tmp/tsvenv/bin/pip install tree-sitter tree-sitter-python
    /tmp/tsvenv/bin/python scripts/ts_reparse_scaling.py

A file of N top-level statements (a kernel and its launcher, repeated); one
space typed and deleted in a launcher's body, 200 reparses, p50 in us:
the whole file reparsed from its last tree (edit at 10% and 90% of the
file), then the edited statement alone, parsed through `included_ranges`
set to its bytes (the tree's offsets stay the file's). docs/performance.md,
stop 53, has the figures.
"""

import statistics
import time

import tree_sitter_python
from tree_sitter import Language, Parser, Point, Range

LANGUAGE = Language(tree_sitter_python.language())

BLOCK = """@triton.jit
def k{i}(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x * 2, mask=offs < n)


def run{i}(x):
    y = torch.empty_like(x)
    k{i}[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y


"""


def source(blocks):
    header = "import torch\nimport triton\nimport triton.language as tl\n\n"
    return (header + "".join(BLOCK.format(i=i) for i in range(blocks))).encode()


def keystrokes(text, at, tree, parse, rounds=200):
    """Types a space at `at` and deletes it, in turn; the p50 of `parse(text, tree)` in us."""
    times = []
    for r in range(rounds):
        if r % 2 == 0:
            text = text[:at] + b" " + text[at:]
            tree.edit(at, at, at + 1, (0, 0), (0, 0), (0, 1))
        else:
            text = text[:at] + text[at + 1 :]
            tree.edit(at, at + 1, at, (0, 0), (0, 1), (0, 0))
        began = time.perf_counter()
        tree = parse(text, tree, r % 2 == 0)
        times.append((time.perf_counter() - began) * 1e6)
    return statistics.median(times)


def edit_point(text, j):
    anchor = f"def run{j}(x):\n    y = torch.empty_like(x)".encode()
    return text.index(anchor) + len(anchor)


def whole_file(blocks, where):
    text = source(blocks)
    parser = Parser(LANGUAGE)
    return keystrokes(text, edit_point(text, int(blocks * where)), parser.parse(text), lambda t, old, _: parser.parse(t, old))


def statement_alone(blocks):
    text = source(blocks)
    j = blocks // 2
    start = text.index(f"def run{j}(x):".encode())
    end = text.index(b"\n\n\n", start) + 1
    parser = Parser(LANGUAGE)

    def parse(t, old, longer):
        parser.included_ranges = [Range(Point(0, 0), Point(0, 0), start, end + int(longer))]
        return parser.parse(t, old)

    parser.included_ranges = [Range(Point(0, 0), Point(0, 0), start, end)]
    tree = parser.parse(text)
    assert tree.root_node.child_count == 1, "the statement alone"
    return keystrokes(text, edit_point(text, j), tree, parse)


def main():
    for blocks in (50, 100, 200, 400, 800, 1600):
        at_10, at_90 = whole_file(blocks, 0.1), whole_file(blocks, 0.9)
        alone = statement_alone(blocks)
        print(
            f"{2 * blocks:5d} top-level statements: whole file {at_10:7.1f} us (edit at 10%), "
            f"{at_90:7.1f} us (at 90%); the statement alone {alone:5.1f} us"
        )


if __name__ == "__main__":
    main()
