//! KL001 python-time-loop-launch.

use std::collections::HashMap;

use crate::analysis::model::{range_of, FileModel};
use crate::config::Settings;
use crate::diagnostic::{Diagnostic, Severity};

use super::Rule;

pub const RULE: Rule = Rule {
    code: "KL001",
    name: "python-time-loop-launch",
    severity: Severity::Warning,
    summary: "A kernel is launched inside a Python loop over time steps",
    doc: DOC,
    check,
};

const DOC: &str = r#"# KL001 python-time-loop-launch

## What it does
Finds Triton kernels launched inside a Python loop over time steps
(`for t in range(seq_len)`, `for t in range(seq_len - 1, -1, -1)`,
`reversed(range(steps))`, `while t < T`), directly or through a helper
function that launches, and estimates the launches per forward.

The loop is recognised by what it does, not by its name: its bound comes
from a tensor's shape, or its variable indexes an input tensor. A loop over
layers (`range(self.num_layers)`) alone is not a time loop.

## Why is this bad?
Every launch costs a few microseconds of CPU and a round of GPU scheduling,
and every step runs only a tiny product. In the runs this rule comes from a
6-layer GRU launched (1 + 512 × 2) × 6 = 6,150 kernels per forward and scored
0.135x against PyTorch; the persistent version launched 6 and scored 1.37x.

## Example
```python
for layer in range(self.num_layers):
    for t in range(seq_len):
        gru_step(x[t], h, w_hh)      # launches gru_cell_kernel[grid](...)
```

## Use instead
Move the time loop into the kernel (a persistent kernel): one launch per
layer, the input projection for all steps computed as one GEMM before it.
```python
gates_x = x @ w_ih.T + b_ih           # (seq_len, batch, 3 * hidden), one GEMM
gru_layer_kernel[grid](gates_x, h, w_hh, out, seq_len, ...)   # loops over t inside
```
"#;

/// One Python time loop that launches kernels.
pub struct TimeLoopLaunches {
    pub host_fn: usize,
    pub loop_index: usize,
    /// (launch index, the helper call leading there, if indirect).
    pub launches: Vec<(usize, Option<tree_sitter::Range>)>,
    pub estimate: String,
}

pub fn time_loop_launches(model: &FileModel) -> Vec<TimeLoopLaunches> {
    let mut out = Vec::new();
    for f in 0..model.host_fns.len() {
        let func = &model.host_fns[f];
        let time: Vec<bool> = (0..func.loops.len()).map(|l| model.is_time_loop(f, l)).collect();
        for l in 0..func.loops.len() {
            if !time[l] {
                continue;
            }
            let reached = model.launches_in_loop(f, l);
            if reached.is_empty() {
                continue;
            }
            // A nested time loop that launches gets the diagnostic instead.
            let inner_launches = (0..func.loops.len())
                .any(|i| i != l && time[i] && within(func, i, l) && !model.launches_in_loop(f, i).is_empty());
            if inner_launches {
                continue;
            }
            let per_step = reached.len();
            let mut factors = vec![format!("{} launch{} per step", per_step, if per_step == 1 { "" } else { "es" })];
            factors.push(format!("{} steps", model.loop_bound_text(f, l)));
            let mut p = func.loops[l].parent;
            while let Some(pl) = p {
                factors.push(factor(model, f, pl, time[pl]));
                p = func.loops[pl].parent;
            }
            factors.extend(caller_factors(model, f));
            out.push(TimeLoopLaunches {
                host_fn: f,
                loop_index: l,
                launches: reached.into_iter().map(|(i, call)| (i, call.map(|c| c.range()))).collect(),
                estimate: factors.join(" × "),
            });
        }
    }
    out
}

fn within(func: &crate::analysis::model::HostFn, inner: usize, outer: usize) -> bool {
    let mut p = func.loops[inner].parent;
    while let Some(x) = p {
        if x == outer {
            return true;
        }
        p = func.loops[x].parent;
    }
    false
}

fn factor(model: &FileModel, f: usize, l: usize, is_time: bool) -> String {
    let bound = model.loop_bound_text(f, l);
    let noun = if is_time {
        "steps"
    } else if bound.to_ascii_lowercase().contains("layer") {
        "layers"
    } else {
        "iterations"
    };
    format!("{bound} {noun}")
}

/// Loops around the call sites of host function `f` in its callers (first caller that has any).
fn caller_factors(model: &FileModel, f: usize) -> Vec<String> {
    let name = &model.host_fns[f].name;
    for g in 0..model.host_fns.len() {
        if g == f {
            continue;
        }
        for call in model.host_fns[g].calls.iter().filter(|c| &c.callee == name) {
            if !model.callees(g, call).contains(&f) || call.loops.is_empty() {
                continue;
            }
            return call.loops.iter().rev().map(|&l| factor(model, g, l, model.is_time_loop(g, l))).collect();
        }
    }
    Vec::new()
}

/// Kernel name -> launches-per-forward estimate, for kernels KL001 sees launched per step.
pub fn launch_estimates(model: &FileModel) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for tl in time_loop_launches(model) {
        for (li, _) in &tl.launches {
            out.entry(model.launches[*li].kernel.clone()).or_insert_with(|| tl.estimate.clone());
        }
    }
    out
}

fn check(model: &FileModel, _settings: &Settings, out: &mut Vec<Diagnostic>) {
    for tl in time_loop_launches(model) {
        let lp = &model.host_fns[tl.host_fn].loops[tl.loop_index];
        let mut kernels: Vec<&str> = Vec::new();
        for (li, _) in &tl.launches {
            let k = model.launches[*li].kernel.as_str();
            if !kernels.contains(&k) {
                kernels.push(k);
            }
        }
        let names = kernels.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
        let message = format!(
            "{names} launched inside a Python time loop: {}. Move the time loop into the kernel (persistent kernel, one launch per layer)",
            tl.estimate
        );
        let mut d = RULE.diagnostic(lp.header_range, message);
        for (li, via) in &tl.launches {
            let launch = &model.launches[*li];
            if let Some(call) = via {
                let call_text =
                    model.src.get(call.start_byte..call.end_byte).unwrap_or("").lines().next().unwrap_or("");
                d = d.with_related(
                    crate::text::TextRange::new(call.start_byte, call.end_byte),
                    format!("`{}` launches `{}` once per step", call_text.trim(), launch.kernel),
                );
            }
            d = d.with_related(range_of(launch.node), format!("launch of `{}`", launch.kernel));
        }
        out.push(d);
    }
}
