"""What a keystroke's reparse would cost if a document were several trees,
each holding a run of top-level statements, instead of one.

    python -m venv /tmp/tsvenv && /tmp/tsvenv/bin/pip install tree-sitter tree-sitter-python
    /tmp/tsvenv/bin/python scripts/ts_chunk_reparse.py [--gap-ms 3]

tree-sitter-python rebuilds the module's whole statement list on every
reparse (`scripts/ts_reparse_scaling.py`): a keystroke pays for every
top-level statement of the file. With the file cut into chunks of S
statements, each parsed through `included_ranges` (so that every node keeps
the file's offsets), a keystroke reparses one chunk, but every chunk after
the edit must be told that its text moved (`Tree.edit`), which copies the
nodes down its leftmost path where another holder shares the tree. This
prints both parts against the whole file's reparse, p50 in us over 200
keystrokes (a space typed and deleted in a launcher in the middle of the
file), with `--gap-ms` an idle pause before each (a core left idle comes
back with cold caches, as between a user's keystrokes). The shifts are
timed through the Python binding, whose own cost per call is printed too.
docs/performance.md (stop 55) has the figures.
"""

import argparse
import statistics
import time

from tree_sitter import Parser, Point, Range

from ts_reparse_scaling import LANGUAGE, source  # the same file of kernels and launchers


def point(text, at):
    row = text.count(b"\n", 0, at)
    return Point(row, at - (text.rfind(b"\n", 0, at) + 1))


def statement_starts(text):
    """Byte offsets where a top-level statement starts (a decorator starts its definition)."""
    starts, at = [], 0
    for line in text.split(b"\n"):
        if line[:1].isalpha() or line[:1] == b"@":
            if not (starts and text[starts[-1] : at].startswith(b"@") and text.count(b"\n", starts[-1], at) == 1):
                starts.append(at)
        at += len(line) + 1
    return starts


def keystroke(at, grow, text_before, text_after):
    """The `Tree.edit` arguments of a space typed (`grow`) or deleted at `at`."""
    return (
        at,
        at if grow else at + 1,
        at + 1 if grow else at,
        point(text_before, at),
        point(text_before, at + (0 if grow else 1)),
        point(text_after, at + (1 if grow else 0)),
    )


def run(blocks, size, gap, rounds=200):
    """p50 (us) of: the whole file's reparse; the edited chunk's reparse; the shifts of the chunks after it."""
    text = source(blocks)
    at = text.index(f"def run{blocks // 2}(x):\n    y = torch.empty_like(x)".encode())
    at += len(f"def run{blocks // 2}(x):\n    y = torch.empty_like(x)")
    whole_parser, chunk_parser = Parser(LANGUAGE), Parser(LANGUAGE)
    whole = whole_parser.parse(text)
    starts = statement_starts(text)[::size] + [len(text)]
    bounds = list(zip(starts, starts[1:]))
    chunks = []
    for s, e in bounds:
        chunk_parser.included_ranges = [Range(point(text, s), point(text, e), s, e)]
        chunks.append(chunk_parser.parse(text))
    k = next(i for i, (s, e) in enumerate(bounds) if s <= at < e)
    times = {"whole": [], "chunk": [], "shifts": []}
    held = []
    for r in range(rounds):
        grow = r % 2 == 0
        after = text[:at] + b" " + text[at:] if grow else text[:at] + text[at + 1 :]
        edit = keystroke(at, grow, text, after)
        if gap:
            time.sleep(gap)
        began = time.perf_counter()
        whole.edit(*edit)
        whole = whole_parser.parse(after, whole)
        times["whole"].append(time.perf_counter() - began)
        # The analysis of the last version still holds its trees: the edits copy what they change.
        held = [c.copy() for c in chunks]
        if gap:
            time.sleep(gap)
        began = time.perf_counter()
        for c in chunks[k + 1 :]:
            c.edit(*edit)
        times["shifts"].append(time.perf_counter() - began)
        s, e = bounds[k]
        bounds = [(a, b) for a, b in bounds[:k]] + [(s, e + (1 if grow else -1))]
        bounds += [(a + (1 if grow else -1), b + (1 if grow else -1)) for a, b in zip(starts[k + 1 :], starts[k + 2 :])]
        starts = [b[0] for b in bounds] + [bounds[-1][1]]
        s, e = bounds[k]
        ranges = [Range(point(after, s), point(after, e), s, e)]
        began = time.perf_counter()
        chunks[k].edit(*edit)
        chunk_parser.included_ranges = ranges
        chunks[k] = chunk_parser.parse(after, chunks[k])
        times["chunk"].append(time.perf_counter() - began)
        text = after
    del held
    assert not whole.root_node.has_error and not any(c.root_node.has_error for c in chunks)
    tops = sum(c.root_node.child_count for c in chunks)
    assert tops == whole.root_node.child_count, (tops, whole.root_node.child_count)
    return {name: statistics.median(v) * 1e6 for name, v in times.items()}, len(chunks) - k - 1


def binding_cost(rounds=2000):
    """What one `Tree.edit` call costs through the binding on a one-node tree (us)."""
    tree = Parser(LANGUAGE).parse(b"x\n")
    began = time.perf_counter()
    for r in range(rounds):
        tree.edit(0, 0, 0, Point(0, 0), Point(0, 0), Point(0, 0))
    return (time.perf_counter() - began) / rounds * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gap-ms", type=float, default=0.0)
    gap = ap.parse_args().gap_ms / 1000
    print(f"Tree.edit through the binding, a one-node tree: {binding_cost():.2f} us per call")
    for blocks in (200, 400, 800):
        for size in (1, 8, 16, 32, 64):
            t, shifted = run(blocks, size, gap)
            print(
                f"{2 * blocks:5d} statements, chunks of {size:2d}: whole file {t['whole']:7.1f} us; "
                f"the chunk {t['chunk']:6.1f} us + {shifted:3d} chunks shifted {t['shifts']:6.1f} us"
            )


if __name__ == "__main__":
    main()
