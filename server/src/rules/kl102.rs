//! KL102 torch-computes-the-task.

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::candidate;
use crate::model::{range_of, task, FileModel, NodeKind};

use super::{Reach, Rule, Scope};

pub const RULE: Rule = Rule {
    code: "KL102",
    name: "torch-computes-the-task",
    severity: Severity::Error,
    summary: "`ModelNew.forward` returns the result of the PyTorch op that is the task's main computation",
    doc: DOC,
    reach: Reach::Host,
    hygiene: true,
    check,
    per_node: None,
};

const DOC: &str = r#"# KL102 torch-computes-the-task

## What it does
In a candidate file, follows each value `ModelNew.forward` returns back
through local assignments, tuples, subscripts and views to where it is
computed, and reports it when that is the PyTorch module or functional op the
reference uses for the task's main computation: `self.gru(x, h0)` in a GRU
task, `torch.matmul(a, b)` in a matmul task.

The task's main computation is read from the reference `Model` in the same
file: the computing ops its `forward` calls, narrowed to the heavy ones
(recurrent layers, convolutions, linear layers and GEMMs, attention) when it
has any. When the file has no `Model`, the rule knows only the ops that are a
task on their own: `nn.GRU`, `nn.LSTM`, `nn.RNN`, `nn.MultiheadAttention`,
the `nn.Transformer*` layers, convolutions, and
`F.scaled_dot_product_attention`. In the editor and `kernel-lsp check`, a
reference in another file (the `# kernel-lsp: reference = PATH` comment) is
not read, since rules do no I/O; the rewrite gate reads the reference the
benchmark uses and checks the answer against its `Model`.

Scaffolding is fine: reading weights, allocating with `torch.empty`, views,
and a single input GEMM outside a recurrence (it is not the recurrence, which
is the task). Only what `forward` *returns* counts: PyTorch computing one
stage of a larger task, whose result a kernel then consumes, is not this rule.

## Why is this bad?
The candidate then times PyTorch against PyTorch: it matches the reference
and scores about 1x (or better, with a cached or reordered call) while no
kernel does the work. KernelBench's checker looks for `torch.nn.functional`
names with a regular expression and cannot tell that call from scaffolding.

## Example
```python
class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers)

    def forward(self, x, h0):
        gates = x @ self.gru.weight_ih_l0.t()      # scaffolding
        output, h_n = self.gru(x, h0)              # the task, in PyTorch
        return output
```

## Use instead
Return what your kernel computed; read the module's weights if you keep it
for them:
```python
    def forward(self, x, h0):
        out = torch.empty(...)
        gru_persistent_kernel[grid](x, h0, self.gru.weight_hh_l0, out, ...)
        return out
```
"#;

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    if !candidate::is_candidate(model) {
        return;
    }
    let own;
    let task = match scope.task {
        Some(task) => task,
        None => {
            own = task::ops(model, &candidate::imports(model));
            &own
        }
    };
    check_task(model, task, out);
}

/// KL102 against a known task: `task` holds the ops' lower-cased names.
fn check_task(model: &FileModel, task: &[String], out: &mut Vec<Diagnostic>) {
    if task.is_empty() {
        return;
    }
    let Some(forward) = candidate::method(model, "ModelNew", "forward") else { return };
    let imports = candidate::imports(model);
    let modules = candidate::torch_modules(model, &imports, "ModelNew");
    let src = model.src;
    let func = model.host_fns[forward].node;
    for (ret, value) in candidate::returns(func) {
        for origin in candidate::origins(model, func, value, ret.start_byte()) {
            if origin.kind_name() != "call" {
                continue;
            }
            let Some(op) = task::op_key(origin, &imports, &modules, src) else { continue };
            if !task.contains(&op) {
                continue;
            }
            let what = model.text(origin).split('(').next().unwrap_or_default().trim().to_string();
            let message = format!(
                "`ModelNew.forward` returns what `{what}` computes, and that is the task's main computation ({op}): PyTorch does the work and the kernel is scaffolding. Return what your kernel computed"
            );
            out.push(RULE.diagnostic(range_of(origin), message).with_related(range_of(ret), "returned here"));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::checker::check_text;
    use crate::config::Settings;

    fn kl102(src: &str) -> Vec<String> {
        let settings = Settings { select: vec!["KL102".into()], ..Settings::default() };
        check_text(src, &settings).diagnostics.iter().map(|d| src[d.range.start..d.range.end].to_string()).collect()
    }

    const HEADER: &str = r#"
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.linear = nn.Linear(n, n)

    def forward(self, x):
        return torch.relu(self.linear(x))


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=offs < n), 0.0), mask=offs < n)
"#;

    /// The GEMM returned through a method of the class, or under an elementwise
    /// epilogue (`.relu_()`), is still PyTorch doing the task's main work.
    #[test]
    fn a_method_or_an_epilogue_does_not_hide_the_returned_op() {
        let through_method = format!(
            "{HEADER}
class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.linear = nn.Linear(n, n)

    def _project(self, x):
        return self.linear(x)

    def forward(self, x):
        y = torch.empty_like(x)
        relu_kernel[(1,)](x, y, x.numel(), BLOCK=1024)
        return self._project(x)
"
        );
        assert_eq!(kl102(&through_method), vec!["self.linear(x)"]);
        let epilogue = format!(
            "{HEADER}
class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n, n))

    def forward(self, x):
        y = torch.empty_like(x)
        relu_kernel[(1,)](x, y, x.numel(), BLOCK=1024)
        return F.linear(x, self.w).relu_()
"
        );
        assert_eq!(kl102(&epilogue), vec!["F.linear(x, self.w)"]);
    }

    /// The kernel's own output, returned through a method, is the kernel's work.
    #[test]
    fn the_kernels_output_through_a_method_does_not_fire() {
        let src = format!(
            "{HEADER}
class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.linear = nn.Linear(n, n)

    def _relu(self, h):
        y = torch.empty_like(h)
        relu_kernel[(1,)](h, y, h.numel(), BLOCK=1024)
        return y

    def forward(self, x):
        return self._relu(self.linear(x))
"
        );
        assert!(kl102(&src).is_empty(), "{:?}", kl102(&src));
    }
}
