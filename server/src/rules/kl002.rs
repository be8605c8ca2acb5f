//! KL002 serialized-tile-loop.

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::{collect_identifiers, loop_within, FileModel, Kernel};

use super::{Reach, Rule, Scope};
use crate::model::NodeKind;

pub const RULE: Rule = Rule {
    code: "KL002",
    name: "serialized-tile-loop",
    severity: Severity::Warning,
    summary: "A kernel walks an output dimension tile by tile while the grid does not cover it",
    doc: DOC,
    reach: Reach::Kernel,
    hygiene: false,
    check,
    per_node: None,
};

const DOC: &str = r#"# KL002 serialized-tile-loop

## What it does
Finds loops inside a kernel whose variable steps by a block size and offsets
the tile a `tl.store` writes (an output dimension), where the loop neither
starts from nor strides by `tl.program_id`: one program walks every tile of
that dimension in turn, with matrix work (a `tl.dot` or an inner reduction
loop) in each.

## Why is this bad?
The grid leaves the dimension to a single program, so its tiles run one
after another on one SM while the others idle. In the runs this rule comes
from, a GRU kernel with grid `(cdiv(B, BLOCK_B),)` and B = 6 walked the
hidden dimension with `while n < H` and a `while k < H` reduction inside:
one program did 512 × 4 × 8 = 16,384 small GEMMs and the task scored 0.25x
(209.71 ms against 52.97 ms).

## Example
```python
pid_b = tl.program_id(0)
n = 0
while n < H:
    offs_n = n + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_B, BLOCK_N), tl.float32)
    k = 0
    while k < H:
        ...
        k += BLOCK_K
    tl.store(out_ptr + offs_b[:, None] * H + offs_n[None, :], acc)
    n += BLOCK_N
```

## Use instead
Give the dimension its own grid axis and drop the loop:
```python
pid_b = tl.program_id(0)
pid_n = tl.program_id(1)
offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
...
grid = (triton.cdiv(B, BLOCK_B), triton.cdiv(H, BLOCK_N))
```
A loop that carries a value from one tile to the next (a chunked
recurrence) or whose inner loop adds into memory that other tiles also
update (`dq` in a causal attention backward) is not reported: a grid axis
would break it. Nor is a walk that must stay in order: one step of an
enclosing loop that reads back what the walk stored (the blocks of a
triangular solve or a blocked factorization, where each block needs every
tile of the one before), or a walk in a kernel whose programs never pick an
output tile (no `tl.program_id` value is scaled by a block size: the grid
already runs one program per independent matrix or head). Nor is a walk
inside, or around, a loop that hands each program its share of the tiles
(one that starts from or strides by `tl.program_id`: a persistent kernel
launched with one program per SM): the grid covers the work that way.

If the loop sits inside a time loop that carries state through global
memory, the programs of the new axis must also wait for each other between
steps (a grid-wide barrier), or the rewrite creates the KL003 race.
"#;

/// Whether loop `l` carries a value from one iteration to the next, other
/// than its own counter: a name the loop reads before it rebinds it
/// (`state += tl.dot(k, v)`, `h = f(h)`).
fn carries_state(model: &FileModel, k: &Kernel, l: usize) -> bool {
    let lp = &k.loops[l];
    let (start, end) = (lp.body.start_byte(), lp.body.end_byte());
    let var = lp.var.as_deref();
    let in_body = |a: &&crate::model::Assign| a.node.start_byte() >= start && a.node.end_byte() <= end;
    k.assigns.iter().filter(in_body).any(|a| {
        // Counters of this loop and of loops nested in it step themselves.
        if Some(a.target.as_str()) == var
            || k.loops.iter().any(|n| n.var.as_deref() == Some(a.target.as_str()) && lp.contains(n.node))
        {
            return false;
        }
        // The first binding in the body reads the name (`h = f(h)`, `s += x`), or a read precedes it.
        let first =
            k.assigns.iter().filter(in_body).filter(|b| b.target == a.target).min_by_key(|b| b.node.start_byte());
        let Some(first) = first else { return false };
        if first.augmented {
            return true;
        }
        let mut ids = Vec::new();
        collect_identifiers(first.value, model.src, &mut ids);
        ids.contains(&a.target) || reads_before(model, lp.body, &a.target, first.node.start_byte())
    })
}

/// Whether a loop nested in loop `l` reads and writes back the same memory
/// (`dq = tl.load(dq_ptrs)` ... `tl.store(dq_ptrs, dq)`): an accumulation
/// whose rows other iterations of `l` may also add to, as a causal attention
/// backward does for the query gradient. A grid axis over `l` would race on them.
fn accumulates_in_memory(model: &FileModel, k: &Kernel, l: usize) -> bool {
    let pointer = |c: &crate::model::KCall, name: &str| {
        c.is_tl(name).then(|| c.arg(0, "pointer").map(|p| model.text(p).trim().to_string())).flatten()
    };
    (0..k.loops.len()).filter(|&i| i != l && loop_within(&k.loops, i, l)).any(|i| {
        let loads: Vec<String> = k.calls_in_loop(i).filter_map(|c| pointer(c, "load")).collect();
        k.calls_in_loop(i).filter_map(|c| pointer(c, "store")).any(|s| loads.contains(&s))
    })
}

/// Whether `name` is read inside `body` before byte `at`.
fn reads_before(model: &FileModel, body: tree_sitter::Node, name: &str, at: usize) -> bool {
    let mut found = false;
    crate::model::visit_nodes(body, &mut |n| {
        if !found && n.kind_name() == "identifier" && n.start_byte() < at && model.text(n) == name {
            found = true;
        }
    });
    found
}

/// The pointer argument a pointer expression starts from: `B_ptr` in
/// `B_ptr + rows[:, None] * stride`, followed through names bound once
/// (`b_base = B_ptr + ...`).
fn base_pointer<'a>(model: &FileModel, k: &Kernel<'a>, mut n: tree_sitter::Node<'a>) -> Option<String> {
    for _ in 0..8 {
        match n.kind_name() {
            "binary_operator" => n = crate::model::field!(n, "left")?,
            "parenthesized_expression" => n = n.named_child(0)?,
            "identifier" => {
                let name = model.text(n);
                if k.param(name).is_some_and(|p| !p.constexpr) {
                    return Some(name.to_string());
                }
                let mut binds = k.assigns.iter().filter(|a| a.target == name && !a.augmented);
                let (Some(only), None) = (binds.next(), binds.next()) else { return None };
                n = only.value;
            }
            _ => return None,
        }
    }
    None
}

/// Whether loop `l` is one step of an in-order walk: an enclosing loop reads,
/// outside `l`, the memory `l` writes (the next block of a triangular solve or a blocked
/// factorization loads what this block's updates stored). Each step needs
/// every tile of the one before, so the tiles cannot be a grid axis without
/// a grid-wide barrier between steps.
fn step_of_in_order_walk(model: &FileModel, k: &Kernel, l: usize) -> bool {
    let stored: Vec<String> = k
        .calls_in_loop(l)
        .filter(|c| c.is_tl("store"))
        .filter_map(|c| c.arg(0, "pointer").and_then(|p| base_pointer(model, k, p)))
        .collect();
    (0..k.loops.len()).filter(|&o| o != l && loop_within(&k.loops, l, o)).any(|o| {
        k.calls_in_loop(o)
            .filter(|c| c.is_tl("load") && !k.loops[l].contains(c.node))
            .filter_map(|c| c.arg(0, "pointer").and_then(|p| base_pointer(model, k, p)))
            .any(|b| stored.contains(&b))
    })
}

/// Whether a program picks a tile of the output: a value derived from
/// `tl.program_id` is scaled by a block size (`pid_m * BLOCK_M`). A grid that
/// never does so runs one program per independent unit (a matrix of a batch,
/// a head), and walking that unit's tiles inside the program is the design.
fn program_picks_tile(model: &FileModel, k: &Kernel) -> bool {
    let mut pid: Vec<String> = Vec::new();
    for _ in 0..3 {
        for a in &k.assigns {
            let t = model.text(a.value);
            let mut ids = Vec::new();
            collect_identifiers(a.value, model.src, &mut ids);
            if (t.contains("program_id") || ids.iter().any(|i| pid.contains(i))) && !pid.contains(&a.target) {
                pid.push(a.target.clone());
            }
        }
    }
    let from_pid = |t: &str| {
        t.contains("program_id")
            || pid.iter().any(|p| t.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == p))
    };
    let scale = |t: &str| {
        let t = t.trim().trim_start_matches('(').trim_end_matches(')');
        k.is_constexpr(t) || t.parse::<i64>().is_ok_and(|v| v > 1)
    };
    k.products.iter().any(|(a, b)| (from_pid(a) && scale(b)) || (from_pid(b) && scale(a)))
}

/// How many distinct `tl.program_id` axes the kernel reads.
fn pid_axes(model: &FileModel, k: &Kernel) -> usize {
    let mut axes: Vec<String> = Vec::new();
    for c in k.tl_calls("program_id") {
        let axis = c.arg(0, "axis").map(|a| model.text(a).trim().to_string()).unwrap_or_default();
        if !axes.contains(&axis) {
            axes.push(axis);
        }
    }
    axes.len()
}

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    let src = model.src;
    for k in scope.kernels {
        for (l, lp) in k.loops.iter().enumerate() {
            let Some(var) = &lp.var else { continue };
            if !k.is_tile_loop(l, model) || k.loop_follows_grid(l, src) {
                continue;
            }
            let offsets_store = k
                .calls_in_loop(l)
                .filter(|c| c.is_tl("store"))
                .any(|s| s.arg(0, "pointer").is_some_and(|p| k.deps(p, src).contains(var.as_str())));
            if !offsets_store {
                continue;
            }
            let has_nested_loop = k.loops.iter().any(|inner| {
                let mut p = inner.parent;
                while let Some(x) = p {
                    if x == l {
                        return true;
                    }
                    p = k.loops[x].parent;
                }
                false
            });
            let _ = has_nested_loop;
            if !k.calls_in_loop(l).any(|c| c.is_tl("dot")) {
                continue;
            }
            // A chunked recurrence (`for i_t in range(NT)` carrying `b_h`): a grid axis would break it.
            if carries_state(model, k, l) || accumulates_in_memory(model, k, l) {
                continue;
            }
            // A step of an in-order walk (a triangular solve's block), or a grid
            // that already runs one program per independent unit: the walk is
            // the order the algorithm needs, not a missing grid axis.
            if step_of_in_order_walk(model, k, l) || !program_picks_tile(model, k) {
                continue;
            }
            // A persistent schedule: a loop around the walk, or inside it, hands
            // each program its share of the tiles from the grid (it starts from
            // or strides by `tl.program_id`), so the walk is that share.
            let shares_out = (0..k.loops.len()).any(|o| {
                o != l && (loop_within(&k.loops, l, o) || loop_within(&k.loops, o, l)) && k.loop_follows_grid(o, src)
            });
            if shares_out {
                continue;
            }
            // Other grid axes give the programs parallelism; walking one dimension
            // inside a program to reuse an operand is then a choice. The seeds'
            // mistake is the walk under a one-axis grid, or inside a time loop.
            let in_time_loop = k.time_loops(model).iter().any(|&t| t != l && loop_within(&k.loops, l, t));
            if !in_time_loop && pid_axes(model, k) > 1 {
                continue;
            }
            let dim = lp.stop.map(|s| model.text(s).trim().to_string()).unwrap_or_else(|| "?".into());
            let step = lp.step.map(|s| model.text(s).trim().to_string());
            let tiles = match &step {
                Some(s) => format!("{dim} / {s} tiles"),
                None => "its tiles".to_string(),
            };
            let message = format!(
                "serialized tile loop in `{}`: `{var}` walks the output dimension `{dim}` tile by tile inside one program ({tiles} run one after another); no `tl.program_id` axis covers it. Make it a grid axis: `pid = tl.program_id(1)` and `triton.cdiv({dim}, BLOCK)` in the grid",
                k.name
            );
            let fix = crate::fix::grid2d::fix(model, k, l);
            out.push(
                RULE.diagnostic(lp.header_range, message)
                    .with_related(k.name_range, format!("kernel `{}`", k.name))
                    .with_fix(fix),
            );
        }
    }
}
