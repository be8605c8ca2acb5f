//! KL103 kernel-never-launched.

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::range_of;

use super::{Reach, Rule, Scope};
use crate::model::candidate;

pub const RULE: Rule = Rule {
    code: "KL103",
    name: "kernel-never-launched",
    severity: Severity::Error,
    summary:
        "a `@triton.jit` kernel that nothing reachable from `ModelNew.forward` launches, in a file with no other launch",
    doc: DOC,
    reach: Reach::Host,
    hygiene: true,
    check,
    per_node: None,
};

const DOC: &str = r#"# KL103 kernel-never-launched

## What it does
In a candidate file, follows `ModelNew.forward` through the helpers,
methods and `torch.autograd.Function.apply` calls it makes, and reports each
`@triton.jit` kernel when no launch (`kernel[grid](...)`) is reachable at all.
A kernel that only other kernels call is reported with the kernel that calls
it. A file whose `forward` launches some kernel is left alone, even if it
also keeps an unused variant.

## Why is this bad?
The kernel is decoration: `forward` computes the result some other way
(usually with PyTorch), and the score measures that. Reviewers and regex
checkers see a `@triton.jit` function and assume the task is done in Triton.

## Example
```python
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    ...

class ModelNew(nn.Module):
    def forward(self, x, y):
        return x + y
```

## Use instead
Launch the kernel from `forward` (or a helper it calls):
```python
    def forward(self, x, y):
        out = torch.empty_like(x)
        add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
        return out
```
"#;

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    if !candidate::is_candidate(model) || model.kernels.is_empty() {
        return;
    }
    let Some(forward) = candidate::method(model, "ModelNew", "forward") else { return };
    let launches = candidate::reaches(model, forward, |f| {
        let func = &model.host_fns[f];
        let range = range_of(func.node);
        !func.launches.is_empty()
            || func.stub.as_ref().is_some_and(|s| s.launches || s.launch_candidates)
            || model.launch_candidates.iter().any(|r| range.contains_range(*r))
    });
    if launches {
        return;
    }
    let forward_name = model.host_fns[forward].name_range;
    for k in &model.kernels {
        let message = format!(
            "`{}` is never launched: nothing `ModelNew.forward` reaches launches a kernel, so the result is computed some other way. Launch the kernel from `forward` or a helper it calls",
            k.name
        );
        out.push(RULE.diagnostic(k.name_range, message).with_related(forward_name, "`forward` launches nothing"));
    }
}

#[cfg(test)]
mod tests {
    use crate::checker::check_text;
    use crate::config::Settings;

    fn kl103(src: &str) -> usize {
        let settings = Settings { select: vec!["KL103".into()], ..Settings::default() };
        check_text(src, &settings).diagnostics.len()
    }

    const KERNEL_AND_MODULE: &str = r#"
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def halve_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 0.5, mask=offs < n)


class Halve(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        halve_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
"#;

    /// Calling a module of this file runs its `forward`: held as an attribute,
    /// inside `nn.Sequential`, or built and called in one expression.
    #[test]
    fn a_kernel_launched_by_a_held_module_is_launched() {
        for (init, call) in [
            ("self.half = Halve()", "self.half(x)"),
            ("self.half = nn.Sequential(Halve())", "self.half(x)"),
            ("pass", "Halve()(x)"),
        ] {
            let src = format!(
                "{KERNEL_AND_MODULE}

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        {init}

    def forward(self, x):
        return {call}
"
            );
            assert_eq!(kl103(&src), 0, "{init} / {call}");
        }
        // The same module defined but never called from forward: the kernel is never launched.
        let unused = format!(
            "{KERNEL_AND_MODULE}

class ModelNew(nn.Module):
    def forward(self, x):
        return x * 0.5
"
        );
        assert_eq!(kl103(&unused), 1);
    }
}
