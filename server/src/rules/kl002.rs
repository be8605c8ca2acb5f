//! KL002 serialized-tile-loop.

use crate::analysis::model::FileModel;
use crate::config::Settings;
use crate::diagnostic::{Diagnostic, Severity};

use super::Rule;

pub const RULE: Rule = Rule {
    code: "KL002",
    name: "serialized-tile-loop",
    severity: Severity::Warning,
    summary: "A kernel walks an output dimension tile by tile while the grid does not cover it",
    doc: DOC,
    check,
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
If the loop sits inside a time loop that carries state through global
memory, the programs of the new axis must also wait for each other between
steps (a grid-wide barrier), or the rewrite creates the KL003 race.
"#;

fn check(model: &FileModel, _settings: &Settings, out: &mut Vec<Diagnostic>) {
    let src = model.src;
    for k in model.checked_kernels() {
        for (l, lp) in k.loops.iter().enumerate() {
            let Some(var) = &lp.var else { continue };
            if !k.is_tile_loop(l, src) || k.loop_follows_grid(l, src) {
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
            let matrix_work = has_nested_loop || k.calls_in_loop(l).any(|c| c.is_tl("dot"));
            if !matrix_work {
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
