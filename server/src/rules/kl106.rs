//! KL106 precision-downgrade.

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::field;
use crate::model::{inside, range_of};

use super::{Reach, Rule, Scope};
use crate::model::candidate::{self, Imports};
use crate::model::NodeKind;

pub const RULE: Rule = Rule {
    code: "KL106",
    name: "precision-downgrade",
    severity: Severity::Warning,
    summary: "an fp32 task whose inputs, weights or outputs are cast to fp16/bf16",
    doc: DOC,
    reach: Reach::Host,
    hygiene: true,
    check,
    per_node: None,
};

const DOC: &str = r#"# KL106 precision-downgrade

## What it does
In a candidate file of an fp32 task, reports host code that casts tensors
to half precision: `.half()`, `.bfloat16()`, `.to(torch.float16)`,
`.to(dtype=torch.bfloat16)`, `.type(torch.half)` (or a legacy type, `torch.cuda.HalfTensor`), a tensor created with
`dtype=torch.float16`, or `torch.autocast` to fp16/bf16. The task counts as
fp32 unless the file's `get_inputs` (or its reference `Model`) already uses
fp16 or bf16.

`tl.dot` on fp16 operands with an fp32 accumulator *inside* a kernel is not
this rule: that is how tensor cores are used, and the tolerance check judges
the result.

## Why is this bad?
Half the bytes and faster tensor-core paths make the candidate look faster
than the fp32 reference for a reason that is not the kernel, and the error
grows with the problem size: KernelBench's fp32 tolerance is 1e-4, which a
bf16 result misses; under the older 1e-2 tolerance it may pass on small
inputs and fail on real ones.

## Example
```python
def forward(self, x):
    x = x.half()
    out = torch.empty_like(x)
    relu_kernel[grid](x, out, x.numel(), BLOCK=1024)
    return out.float()
```

## Use instead
Keep the task's precision at the boundary; inside a kernel, load fp32 and
cast the `tl.dot` operands if you want tensor cores, accumulating in fp32.
"#;

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    if !candidate::is_candidate(model) {
        return;
    }
    let imports = candidate::imports(model);
    let src = model.src;
    if candidate::task_is_half(model, &imports) {
        return;
    }
    for &scope in candidate::candidate_host_nodes(model) {
        for n in inside(&model.nodes().calls, scope) {
            let Some(func) = field!(n, "function") else { continue };
            let args = field!(n, "arguments");
            let half_arg = args.is_some_and(|a| candidate::mentions_half(a, &imports, src));
            let method = (func.kind_name() == "attribute")
                .then(|| field!(func, "attribute").map(|a| &src[a.byte_range()]))
                .flatten()
                .unwrap_or_default();
            // Every finding below needs a half-precision argument, a `.half()`-like method, or an
            // `autocast`: most calls have none, and qualifying the callee builds a string.
            let func_text = &src[func.byte_range()];
            let may_autocast = func_text.ends_with("autocast")
                || (func.kind_name() == "identifier"
                    && imports.full_name(func_text).is_some_and(|f| f.ends_with("autocast")));
            if !half_arg && !matches!(method, "half" | "bfloat16") && !may_autocast {
                continue;
            }
            let callee = imports.callee(n, src).unwrap_or_default();
            let what = if matches!(method, "half" | "bfloat16") && !callee.starts_with("torch.") {
                Some(format!("`.{method}()`"))
            } else if (matches!(method, "to" | "type") || callee.ends_with("autocast")) && half_arg {
                Some(format!("`{}`", model.text(n)))
            } else if callee.ends_with("autocast") && !half_arg {
                // `torch.autocast("cuda")` defaults to fp16.
                Some(format!("`{}` (fp16 by default on CUDA)", model.text(n)))
            } else if callee.starts_with("torch.") && half_arg && has_dtype_kwarg(n, &imports, src) {
                Some(format!("`{}`", model.text(n)))
            } else {
                None
            };
            let Some(what) = what else { continue };
            let message = format!(
                "{what} computes an fp32 task in half precision: faster for a reason that is not the kernel, and outside KernelBench's fp32 tolerance (1e-4). Keep fp32 at the boundary; cast `tl.dot` operands inside the kernel if you want tensor cores"
            );
            out.push(RULE.diagnostic(range_of(n), message));
        }
    }
}

fn has_dtype_kwarg(call: tree_sitter::Node, imports: &Imports, src: &str) -> bool {
    let Some(args) = field!(call, "arguments") else { return false };
    let mut cursor = args.walk();
    let kwargs: Vec<tree_sitter::Node> =
        args.named_children(&mut cursor).filter(|c| c.kind_name() == "keyword_argument").collect();
    kwargs.into_iter().any(|k| {
        field!(k, "name").is_some_and(|n| &src[n.byte_range()] == "dtype")
            && field!(k, "value").is_some_and(|v| candidate::mentions_half(v, imports, src))
    })
}
