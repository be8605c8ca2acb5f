//! KL009 input-projection-in-time-loop.

use std::collections::HashSet;

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::range_of;

use super::{Reach, Rule, Scope};
use crate::model::field;
use crate::model::NodeKind;

pub const RULE: Rule = Rule {
    code: "KL009",
    name: "input-projection-in-time-loop",
    severity: Severity::Warning,
    summary: "The input-side GEMM is recomputed every step inside the persistent loop",
    doc: DOC,
    reach: Reach::Kernel,
    hygiene: false,
    check,
    per_node: None,
};

const DOC: &str = r#"# KL009 input-projection-in-time-loop

## What it does
Inside a kernel's time loop, finds a `tl.dot` (or a `tl.sum` of products)
whose operand is loaded from an input indexed by the time step, from a
buffer the loop does not write: the input projection `x_t @ W_ih`, computed
step by step. A product whose other operand is the carried state
(`h = tl.dot(h, m_t) + e_t`, a chunked linear recurrence) depends on the
previous step and is not reported; nor is one whose other operand changes
with the step too (two tiles of the same chunk) or is made in the kernel
(`tl.full(..., 1)` for a row sum): the projection multiplies each step's
input by weights every step reads.

## Why is this bad?
The input projection does not depend on the hidden state: for all steps it
is one large GEMM, `(seq_len × batch, input) @ W_ih`, which runs at full
tensor-core speed before the recurrence starts. Computed inside the loop it
becomes `seq_len` tiny products on the critical path, and `W_ih` is re-read
every step. The fast GRU kernels of the runs this rule comes from all
precomputed it.

## Example
```python
for t in range(seq_len):
    x_t = tl.load(x_ptr + t * stride_t + ...)
    gx = tl.dot(x_t, w_ih)            # input projection, every step
    gh = tl.dot(h, w_hh)
```

## Use instead
```python
# host: one GEMM for every step
gates_x = torch.addmm(b_ih, x.reshape(seq_len * batch, input_size), w_ih.t())
# kernel: only the recurrent product per step
for t in range(seq_len):
    gx = tl.load(gx_ptr + t * stride_t + ...)
    gh = tl.dot(h, w_hh)
```
"#;

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    let src = model.src;
    for k in scope.kernels {
        for t in k.time_loops(model) {
            let Some(var) = k.loops[t].var.clone() else { continue };
            let stored: HashSet<String> = k
                .calls_in_loop(t)
                .filter(|c| c.is_tl("store"))
                .filter_map(|c| c.arg(0, "pointer").and_then(|p| k.pointer_base(p, src)))
                .collect();
            // Buffers read at the current step that the loop does not write: inputs.
            let inputs: HashSet<String> = k
                .calls_in_loop(t)
                .filter(|c| c.is_tl("load"))
                .filter_map(|c| c.arg(0, "pointer"))
                .filter(|p| k.deps(*p, src).contains(var.as_str()))
                .filter_map(|p| k.pointer_base(p, src))
                .filter(|b| !stored.contains(b))
                .collect();
            if inputs.is_empty() || !k.is_recurrence(t, model) {
                continue;
            }
            // A `@triton.jit` helper that multiplies what it is passed by weights it
            // loads (`project(x_t, w_ih_ptr, ...)`): the step's input passed as the
            // multiplied argument, a pointer the same at every step as the weights.
            let through_helper = k.calls_in_loop(t).filter(|c| c.tl_name.is_none()).find_map(|call| {
                let helper = model.kernel(&call.callee).filter(|h| h.name != k.name)?;
                let (direct, pointers) = helper.product_params(model)?;
                let at = call.node.start_byte();
                let weights_fixed = pointers.iter().all(|&j| {
                    call.arg(j, &helper.params[j].name)
                        .is_some_and(|a| !k.deps_before(a, src, at).contains(var.as_str()))
                });
                if !weights_fixed {
                    return None;
                }
                direct.iter().find_map(|&i| {
                    let a = call.arg(i, &helper.params[i].name)?;
                    let deps = k.deps_before(a, src, at);
                    if deps.iter().any(|n| k.holds_previous_step(t, n, at)) {
                        return None;
                    }
                    let input = inputs.iter().filter(|b| deps.contains(b.as_str())).min().cloned()?;
                    Some((call.node, input, helper.name.clone()))
                })
            });
            if let Some((node, input, helper)) = through_helper {
                let message = format!(
                    "input projection inside the time loop of `{}`: `{helper}` multiplies what it reads of `{input}` at step `{var}` by weights it loads, every step. Compute it for all steps as one GEMM before the kernel and load the precomputed gates here",
                    k.name
                );
                out.push(
                    RULE.diagnostic(range_of(node), message).with_related(k.loops[t].header_range, "the time loop"),
                );
                continue;
            }
            for call in k.calls_in_loop(t).filter(|c| c.is_tl("dot") || c.is_tl("sum")) {
                let operands: Vec<_> = if call.is_tl("dot") {
                    [call.arg(0, "input"), call.arg(1, "other")].into_iter().flatten().collect()
                } else {
                    call.arg(0, "input").filter(|a| model.text(*a).contains('*')).into_iter().collect()
                };
                // A product that reads the carried state (`tl.dot(h, m_t)` of a
                // chunked linear recurrence) is the recurrence itself, not a projection.
                let at = call.node.start_byte();
                if operands.iter().any(|o| k.deps_before(*o, src, at).iter().any(|n| k.holds_previous_step(t, n, at))) {
                    continue;
                }
                // The projection multiplies the step's input by something every step
                // shares (the weights); when both factors change with the step
                // (`tl.dot(v_c, tl.trans(g_c))` of one chunk's own rows) there is no
                // one GEMM for all steps to hoist.
                let factors: Vec<tree_sitter::Node> = if call.is_tl("dot") {
                    operands.clone()
                } else {
                    // `tl.sum(a * b)`: the factors of the product.
                    let mut o = operands.first().copied();
                    while let Some(p) = o.filter(|p| p.kind_name() == "parenthesized_expression") {
                        o = p.named_child(0);
                    }
                    o.filter(|p| p.kind_name() == "binary_operator")
                        .and_then(|p| Some(vec![field!(p, "left")?, field!(p, "right")?]))
                        .unwrap_or_default()
                };
                let deps: Vec<_> = factors.iter().map(|f| k.deps_before(*f, src, at)).collect();
                let per_step: Vec<bool> = deps.iter().map(|d| d.contains(var.as_str())).collect();
                // ... and the shared factor is read from memory (weights), not made in
                // the kernel: a product by `tl.full(..., 1)` is a row sum.
                let from_memory: Vec<bool> = factors
                    .iter()
                    .zip(&deps)
                    .map(|(f, d)| model.text(*f).contains("load(") || d.iter().any(|n| k.binds_load(n, src)))
                    .collect();
                let hit = (0..factors.len()).find_map(|i| {
                    let others = (0..factors.len()).filter(|&j| j != i);
                    // Weights are read, never written, by the loop: a factor loaded from
                    // memory the loop stores to (a block of `Q` updated in place each
                    // step) is state, and the product is the recurrence.
                    let written = |j: usize| deps[j].iter().any(|n| stored.contains(n));
                    let shared_weights = others.clone().all(|j| !per_step[j] && !written(j))
                        && others.into_iter().any(|j| from_memory[j]);
                    if !shared_weights {
                        return None;
                    }
                    inputs.iter().filter(|b| deps[i].contains(b.as_str())).min().cloned()
                });
                let Some(input) = hit else { continue };
                let message = format!(
                    "input projection inside the time loop of `{}`: this product reads `{input}` at step `{var}` and is recomputed every step. Compute it for all steps as one GEMM before the kernel and load the precomputed gates here",
                    k.name
                );
                out.push(
                    RULE.diagnostic(range_of(call.node), message)
                        .with_related(k.loops[t].header_range, "the time loop"),
                );
                break;
            }
        }
    }
}
