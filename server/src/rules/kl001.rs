//! KL001 python-time-loop-launch.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use crate::analysis::model::{call_arguments, collect_identifiers, range_of, FileModel, HostFn, Kernel};
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
layers (`range(self.num_layers)`) alone is not a time loop. And it must carry
state from one step's launch to the next: a tensor that a launch writes is
read by a launch of a later step (the hidden state `h`, in place or through
`h = step(x[t], h)`). A loop whose launches are independent (copying a list
of tensors into slices of one output, chunking a long axis to stay under
the grid limit, one launch per expert) is not the mistake: each launch could
run concurrently.

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
            if reached.is_empty() || !carries_state(model, f, l) {
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

/// Host names that the launches reached from loop `l` write and read: a
/// written name is one passed for a pointer the kernel stores to (or
/// atomically updates), a read name one passed for a pointer it loads. Names
/// the loop assigns from a written name, or from the result of a call that
/// launches, are written too (`h = step(x[t], h)`, `h, out = out, h`). The loop
/// carries state when a written name is read.
fn carries_state(model: &FileModel, f: usize, l: usize) -> bool {
    let func = &model.host_fns[f];
    let mut written: HashSet<String> = HashSet::new();
    let mut read: HashSet<String> = HashSet::new();
    let identity: HashMap<String, HashSet<String>> = HashMap::new();
    for &li in func.launches.iter().filter(|&&i| model.launches[i].loops.contains(&l)) {
        launch_flow(model, li, &identity, &mut written, &mut read);
    }
    let mut launching_calls: Vec<Node> = Vec::new();
    for call in func.calls.iter().filter(|c| c.loops.contains(&l)) {
        for callee in model.callees(f, call) {
            if model.launches_reached(callee).is_empty() {
                continue;
            }
            launching_calls.push(call.node);
            helper_flow(model, call.node, callee, &identity, 0, &mut written, &mut read);
        }
    }
    // Host assignments inside the loop pass what a launch wrote on to new names.
    let in_loop: Vec<_> = func.assigns.iter().filter(|a| a.loops.contains(&l)).collect();
    for _ in 0..3 {
        for a in &in_loop {
            let mut ids = Vec::new();
            collect_identifiers(a.value, model.src, &mut ids);
            let from_launch = launching_calls.iter().any(|c| contains(a.value, *c));
            if from_launch || ids.iter().any(|i| written.contains(i)) {
                written.insert(a.target.clone());
            }
        }
    }
    written.iter().any(|w| read.contains(w))
}

fn contains(outer: Node, inner: Node) -> bool {
    outer.start_byte() <= inner.start_byte() && inner.end_byte() <= outer.end_byte()
}

/// The host names behind an argument: its identifiers, mapped through `names`
/// (a helper's parameter -> the caller's names) when it is a helper's parameter.
fn arg_names(model: &FileModel, arg: Node, names: &HashMap<String, HashSet<String>>) -> HashSet<String> {
    let mut ids = Vec::new();
    collect_identifiers(arg, model.src, &mut ids);
    let mut out = HashSet::new();
    for id in ids {
        match names.get(&id) {
            Some(outer) => out.extend(outer.iter().cloned()),
            None => {
                out.insert(id);
            }
        }
    }
    out
}

fn launch_flow(
    model: &FileModel,
    li: usize,
    names: &HashMap<String, HashSet<String>>,
    written: &mut HashSet<String>,
    read: &mut HashSet<String>,
) {
    let launch = &model.launches[li];
    let access = model.kernel(&launch.kernel).and_then(|k| pointer_access(model, k));
    let params: Vec<String> =
        model.kernel(&launch.kernel).map(|k| k.params.iter().map(|p| p.name.clone()).collect()).unwrap_or_default();
    let args = launch.args.iter().enumerate().map(|(i, a)| (params.get(i).cloned(), *a));
    let kwargs = launch.kwargs.iter().map(|(k, a)| (Some(k.clone()), *a));
    for (param, arg) in args.chain(kwargs) {
        let host = arg_names(model, arg, names);
        match (&access, param) {
            (Some((stores, loads)), Some(p)) => {
                if stores.contains(&p) {
                    written.extend(host.iter().cloned());
                }
                if loads.contains(&p) {
                    read.extend(host);
                }
            }
            // A kernel this file does not define, or whose memory access is not
            // visible: every argument may be read and written.
            _ => {
                written.extend(host.iter().cloned());
                read.extend(host);
            }
        }
    }
}

fn helper_flow(
    model: &FileModel,
    call: Node,
    callee: usize,
    names: &HashMap<String, HashSet<String>>,
    depth: usize,
    written: &mut HashSet<String>,
    read: &mut HashSet<String>,
) {
    if depth > 4 {
        return;
    }
    let helper = &model.host_fns[callee];
    let (args, kwargs) = call_arguments(call, model.src);
    let params: Vec<&String> = helper.params.iter().filter(|p| p.as_str() != "self").collect();
    let mut inner: HashMap<String, HashSet<String>> = HashMap::new();
    for (i, a) in args.iter().enumerate() {
        if let Some(p) = params.get(i) {
            inner.insert((*p).clone(), arg_names(model, *a, names));
        }
    }
    for (k, a) in &kwargs {
        inner.insert(k.clone(), arg_names(model, *a, names));
    }
    // Names the helper binds itself are its own; only its parameters lead back to the caller.
    for &li in &helper.launches {
        let mut w = HashSet::new();
        let mut r = HashSet::new();
        launch_flow(model, li, &inner, &mut w, &mut r);
        written.extend(w.into_iter().filter(|n| !helper_local(helper, n, &inner)));
        read.extend(r.into_iter().filter(|n| !helper_local(helper, n, &inner)));
    }
    for c in &helper.calls {
        for g in model.callees(callee, c) {
            if g != callee {
                helper_flow(model, c.node, g, &inner, depth + 1, written, read);
            }
        }
    }
}

fn helper_local(helper: &HostFn, name: &str, inner: &HashMap<String, HashSet<String>>) -> bool {
    !inner.values().any(|outer| outer.contains(name)) && helper.assigns.iter().any(|a| a.target == name)
}

/// (pointer parameters the kernel stores to, those it loads from), or `None`
/// when it stores nowhere visible (its memory access sits in helpers or
/// descriptors this analysis does not follow).
fn pointer_access(model: &FileModel, k: &Kernel) -> Option<(HashSet<String>, HashSet<String>)> {
    let mut stores = HashSet::new();
    let mut loads = HashSet::new();
    for c in &k.calls {
        let Some(name) = c.tl_name.as_deref() else { continue };
        let Some(ptr) = c.arg(0, "pointer") else { continue };
        let Some(base) = k.pointer_base(ptr, model.src) else { continue };
        if name == "store" || name.starts_with("atomic_") {
            stores.insert(base.clone());
        }
        if name == "load" || name.starts_with("atomic_") {
            loads.insert(base);
        }
    }
    if stores.is_empty() {
        None
    } else {
        Some((stores, loads))
    }
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
