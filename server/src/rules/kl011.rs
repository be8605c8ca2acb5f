//! KL011 block-shape-mismatch.
//!
//! The shapes are a fact of the model (`model::shapes`): an abstract
//! interpretation of the kernel for each configuration it is compiled with.

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::shape_configs::constexpr_configs;
use crate::model::shapes::shape_conflicts;

use super::{Reach, Rule, Scope};

pub const RULE: Rule = Rule {
    code: "KL011",
    name: "block-shape-mismatch",
    severity: Severity::Error,
    summary: "Block shapes that Triton refuses: `tl.dot` operands, broadcasting, a store against its pointer block",
    doc: DOC,
    reach: Reach::Kernel,
    hygiene: false,
    check,
    per_node: None,
};

const DOC: &str = r#"# KL011 block-shape-mismatch

## What it does
Infers the shape of every block inside a kernel wherever the constexprs are
known: for each launch in the file (its keyword and positional values), each
`triton.Config` of `@triton.autotune`, or the parameters' defaults. It follows
`tl.arange` lengths, `tl.zeros`/`tl.full` shapes, `[:, None]` and
`[None, :]`, broadcasting in arithmetic, comparisons and `tl.where`,
`tl.load`, reductions with `axis` (`tl.sum`, `tl.max`, ...), `tl.trans`,
`tl.reshape` and `tl.broadcast_to` with literal shapes, and `tl.dot`. It
reports an operation Triton refuses, with both shapes and the constexpr
values that made them:

- `tl.dot` operands whose inner dimensions differ, that are not both 2-D or
  both 3-D, whose reduction dimension K is under 8 (Triton 3.9's smallest,
  for fp32; fp16/bf16 need 16), or whose accumulator has another shape;
- operands that do not broadcast (`[64, 32] + [32, 64]`);
- a `tl.store` (or atomic) whose value or mask is larger than its pointer
  block, or a block stored through a scalar pointer;
- a reshape that changes the number of elements.

A shape that cannot be told (a helper's arguments, a value from a call the
rule does not know, a constexpr computed on the host) is unknown and never
reported. Where the compiler in the loop compiles the kernel, its verdict
replaces this one: a kernel that compiled cleanly withdraws the finding, an
error at the same line confirms it.

## Why is this bad?
Triton checks shapes only when it compiles the kernel, which happens at the
first launch, after the model is built and the inputs are on the GPU. The
error (`First input shape ... and second input shape ... are not compatible
for matmul`, `Cannot broadcast`) arrives at run time, once per configuration
an autotuner tries.

## Example
```python
@triton.jit
def mm(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])   # [BM, BK]
    b = tl.load(b_ptr + rn[:, None] * BK + rk[None, :])   # [BN, BK]
    c = tl.dot(a, b)                                       # [64, 32] @ [128, 32]
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], c)

mm[(1,)](a, b, c, BM=64, BN=128, BK=32)
```

## Use instead
```python
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])   # [BK, BN]
    c = tl.dot(a, b)                                       # [64, 32] @ [32, 128]
```
"#;

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    for k in scope.kernels {
        let params_are_scalars = model.launches_of_kernel(k).next().is_some() && model.kernel_calls_to(k).is_empty();
        let mut reported = std::collections::HashSet::new();
        for config in constexpr_configs(k, model) {
            let conflicts = shape_conflicts(k, model, &config.values, params_are_scalars);
            if conflicts.is_empty() {
                continue;
            }
            let mut named: Vec<String> =
                k.params.iter().filter_map(|p| config.values.get(p.name).map(|v| format!("{}={v}", p.name))).collect();
            named.truncate(8);
            let with = if named.is_empty() { String::new() } else { format!(" with {}", named.join(", ")) };
            for c in conflicts {
                if !reported.insert(c.range) {
                    continue;
                }
                let message = format!("{}{with} ({})", c.message, config.label);
                let d = RULE.diagnostic(c.range, message);
                out.push(match config.at {
                    Some(at) => d.with_related(at, "the constexpr values come from here"),
                    None => d,
                });
            }
        }
    }
}
