//! KL001 python-time-loop-launch.
//!
//! The time loops that launch, and their launch estimates, are facts of the
//! model (`model::time_loop_launches`); this rule reports each one.

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::range_of;

use super::{Reach, Rule, Scope};

pub const RULE: Rule = Rule {
    code: "KL001",
    name: "python-time-loop-launch",
    severity: Severity::Warning,
    summary: "A kernel is launched inside a Python loop over time steps",
    doc: DOC,
    reach: Reach::Host,
    hygiene: false,
    check,
    per_node: None,
};

const DOC: &str = r#"# KL001 python-time-loop-launch

## What it does
Finds Triton kernels launched inside a Python loop over time steps
(`for t in range(seq_len)`, `for t in range(seq_len - 1, -1, -1)`,
`reversed(range(steps))`, `while t < T`), directly or through a helper
function that launches (also `StepFunction.apply(...)`, an autograd
`Function`'s `forward`, and a method of an object the module holds,
`self.cell.step(...)`), and estimates the launches per forward.

The loop is recognised by what it does: its bound comes from a tensor's
shape, or its variable indexes an input tensor, or it walks a tensor's time
axis (`enumerate(x.transpose(0, 1))`, `x.unbind(0)`), or its bound is a
module attribute whose name counts time steps (`self.seq_len`,
`self.num_steps`). A loop over layers (`range(self.num_layers)`) alone is
not a time loop. And it must carry
state from one step's launch to the next: a tensor that a launch writes is
read by a launch of a later step (the hidden state `h`, in place, through
`h = step(x[t], h)`, or through a new view of the same tensor each step,
`prev = states[t - 1]`). A loop whose launches are independent (copying a
list of tensors into slices of one output, chunking a long axis to stay
under the grid limit, one launch per expert, a loss computed chunk by chunk
where each chunk's logits are a new tensor that a kernel updates in place)
is not the mistake: each launch could run concurrently. Nor is memory a
step cannot pass on: a slice of its own per step (`out[i]`, `i` the loop's
variable, and the tensor used no other way in the loop) or a scratch buffer
allocated before the loop and never mentioned after it (a workspace reused
per chunk).

The warning names the evidence that the loop walks time steps with a small
step kernel: a step input (`x[t]`), a bound that counts steps (`seq_len`,
`self.num_steps`), a walk over a tensor's axis, or a fixed grid of a few
programs. Without any, the loop may be a factorization's panels or a
reduction over the whole grid per step, where the launch boundary is the
barrier the algorithm needs: it is reported as a hint that says so. So is a
loop whose step also runs an operation that needs all of a tensor at once
(`torch.sort`, `cumsum`, `topk`, directly or in a helper of the file).

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

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    for tl in model.time_loop_launches(scope.stubs) {
        let lp = &model.host_fns[tl.host_fn].loops[tl.loop_index];
        let mut kernels: Vec<&str> = Vec::new();
        for (li, _) in &tl.launches {
            let k = model.launches[*li].kernel.as_str();
            if !kernels.contains(&k) {
                kernels.push(k);
            }
        }
        let names = kernels.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
        let launch_ids: Vec<usize> = tl.launches.iter().map(|(li, _)| *li).collect();
        let whole = model.whole_tensor_step(tl.host_fn, tl.loop_index);
        let evidence = model.time_step_evidence(tl.host_fn, tl.loop_index, &launch_ids);
        let mut d = match (evidence, whole) {
            (_, Some(op)) => {
                let mut d = RULE.diagnostic(
                    lp.header_range,
                    format!(
                        "{names} launched once per step of a loop that passes state from launch to launch ({}), but each step also runs `{op}`, which needs all of a tensor at once: the launch boundary is the barrier across the whole grid that the step needs, and one persistent kernel would have to rebuild it",
                        tl.estimate
                    ),
                );
                d.severity = Severity::Hint;
                d
            }
            (Some(evidence), None) => RULE.diagnostic(
                lp.header_range,
                format!(
                    "{names} launched inside a Python time loop: {}. Move the time loop into the kernel (persistent kernel, one launch per layer). Found: {evidence}, and a launch reads what the previous step's launch wrote",
                    tl.estimate
                ),
            ),
            (None, None) => {
                let mut d = RULE.diagnostic(
                    lp.header_range,
                    format!(
                        "{names} launched once per step of a loop that passes state from launch to launch ({}), but nothing shows a sequence of small time steps: no step input `x[t]`, no bound that counts steps, no fixed small grid. Assumed a loop whose launch boundary is the synchronization it needs (a factorization's panels, a grid-wide reduction) or that bounds memory; if it walks time steps, a persistent kernel saves the launches",
                        tl.estimate
                    ),
                );
                d.severity = Severity::Hint;
                d
            }
        };
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
