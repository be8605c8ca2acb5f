//! KL101 pytorch-fallback.

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::field;
use crate::model::{inside, range_of, visit_nodes, FileModel};
use crate::text::TextRange;

use super::{Reach, Rule, Scope};
use crate::model::candidate::{self, Imports};
use crate::model::NodeKind;

pub const RULE: Rule = Rule {
    code: "KL101",
    name: "pytorch-fallback",
    severity: Severity::Error,
    summary: "a `try` around the kernel path whose handler computes the result with PyTorch",
    doc: DOC,
    reach: Reach::Host,
    hygiene: true,
    check,
    per_node: None,
};

const DOC: &str = r#"# KL101 pytorch-fallback

## What it does
In a candidate file (one that defines `ModelNew`), finds a `try` whose body
launches a Triton kernel (directly or through a helper) and whose `except`
handler computes with PyTorch instead: a `torch.*` or `F.*` operation, a
`torch.nn` module of the class, a tensor method such as `.matmul`, or `@`.
Building tensors (`torch.empty`, `torch.zeros`), views and re-raising are
scaffolding and do not count.

## Why is this bad?
When the kernel fails to compile or crashes, the handler quietly returns
PyTorch's answer: the correctness check passes, the timing measures PyTorch,
and the score says a kernel works that does not. KernelBench's own checker
looks for this shape with a regular expression; here the handler's calls are
resolved through the file's imports, so a handler that only allocates or
re-raises is left alone.

## Example
```python
def forward(self, x):
    try:
        out = torch.empty_like(x)
        gelu_kernel[grid](x, out, x.numel(), BLOCK=1024)
        return out
    except Exception:
        return torch.nn.functional.gelu(x)
```

## Use instead
Let the error surface, so that the repair loop sees it:
```python
def forward(self, x):
    out = torch.empty_like(x)
    gelu_kernel[grid](x, out, x.numel(), BLOCK=1024)
    return out
```
"#;

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    if !candidate::is_candidate(model) {
        return;
    }
    let imports = candidate::imports(model);
    let modules = candidate::torch_modules(model, &imports, "ModelNew");
    let src = model.src;
    for &scope in candidate::candidate_host_nodes(model) {
        for n in inside(&model.nodes().tries, scope) {
            let Some(body) = field!(n, "body") else { continue };
            let Some(launch) = launch_in(model, range_of(body)) else { continue };
            let mut cursor = n.walk();
            for handler in n.named_children(&mut cursor).filter(|c| c.kind_name() == "except_clause") {
                let in_handler = torch_compute(handler, &imports, &modules, src);
                let after = || fallback_after(n, handler, &imports, &modules, src);
                let Some(torch) = in_handler.or_else(after) else { continue };
                let what = model.text(torch).split('(').next().unwrap_or_default().trim().to_string();
                let start = handler.start_byte();
                let header_end =
                    src[start..handler.end_byte()].find(':').map(|i| start + i + 1).unwrap_or(handler.end_byte());
                let message = if in_handler.is_some() {
                    format!(
                        "the `except` handler computes the result with PyTorch (`{what}`) when the kernel path fails: the score would time PyTorch and call it a kernel. Let the error surface instead"
                    )
                } else {
                    format!(
                        "the `except` handler swallows the kernel's failure and PyTorch computes the result after it (`{what}`): the score would time PyTorch and call it a kernel. Let the error surface instead"
                    )
                };
                out.push(
                    RULE.diagnostic(TextRange::new(start, header_end), message)
                        .with_related(launch, "the kernel path inside the `try`")
                        .with_related(range_of(torch), "PyTorch computes here"),
                );
            }
        }
    }
}

/// A handler that neither raises nor returns lets the function run on past
/// the `try`: PyTorch computing the result there (`return torch.relu(x)`,
/// after the `try`, or after the `if self.use_triton:` holding it) is the
/// fallback. The first PyTorch computation in a later statement of the
/// enclosing blocks, up to the function.
fn fallback_after<'a>(
    try_stmt: tree_sitter::Node<'a>,
    handler: tree_sitter::Node<'a>,
    imports: &Imports,
    modules: &[(String, String)],
    src: &str,
) -> Option<tree_sitter::Node<'a>> {
    let mut leaves = false;
    visit_nodes(handler, &mut |n| leaves |= matches!(n.kind_name(), "raise_statement" | "return_statement"));
    if leaves {
        return None;
    }
    let mut at = try_stmt;
    loop {
        let mut next = at.next_named_sibling();
        while let Some(stmt) = next {
            if let Some(found) = torch_compute(stmt, imports, modules, src) {
                return Some(found);
            }
            next = stmt.next_named_sibling();
        }
        let block = at.parent()?;
        let owner = block.parent()?;
        if matches!(owner.kind_name(), "function_definition" | "class_definition" | "module") {
            return None;
        }
        // Out of the `if`/`with`/`else` that holds it, to what follows that.
        at = if owner.kind_name() == "else_clause" || owner.kind_name() == "elif_clause" {
            owner.parent()?
        } else {
            owner
        };
    }
}

/// A launch (direct, or through a call to a helper that launches) inside `range`.
pub(super) fn launch_in(model: &FileModel, range: TextRange) -> Option<TextRange> {
    if let Some(l) = model.launches.iter().find(|l| range.contains_range(range_of(l.node))) {
        return Some(range_of(l.node));
    }
    if let Some(r) = model.launch_candidates.iter().find(|r| range.contains_range(**r)) {
        return Some(*r);
    }
    for (f, func) in model.host_fns.iter().enumerate() {
        for call in func.calls.iter().filter(|c| range.contains_range(range_of(c.node))) {
            if model.callees(f, call).into_iter().any(|c| model.reaches_launch(c)) {
                return Some(range_of(call.node));
            }
        }
    }
    None
}

/// The first PyTorch computation in `node` (a handler), unless the handler re-raises.
fn torch_compute<'a>(
    node: tree_sitter::Node<'a>,
    imports: &Imports,
    modules: &[(String, String)],
    src: &str,
) -> Option<tree_sitter::Node<'a>> {
    let mut found = None;
    let mut raises = false;
    visit_nodes(node, &mut |n| match n.kind_name() {
        "raise_statement" => raises = true,
        "binary_operator" if found.is_none() && field!(n, "operator").is_some_and(|o| o.kind_name() == "@") => {
            found = Some(n)
        }
        "call" if found.is_none() && is_torch_compute_call(n, imports, modules, src) => found = Some(n),
        _ => {}
    });
    if raises {
        return None;
    }
    found
}

/// Whether a call computes with PyTorch: `torch.*` / `F.*` beyond scaffolding,
/// a computing `torch.nn` module kept on `self`, or a compute method on a tensor.
pub(super) fn is_torch_compute_call(
    call: tree_sitter::Node,
    imports: &Imports,
    modules: &[(String, String)],
    src: &str,
) -> bool {
    let Some(func) = field!(call, "function") else { return false };
    if let Some(attr) = candidate::self_attr(func, src) {
        return modules.iter().any(|(a, _)| a == attr);
    }
    if let Some(q) = imports.qualify(func, src) {
        if q.starts_with("torch.") {
            return !candidate::is_torch_scaffolding(&q);
        }
    }
    if func.kind_name() == "attribute" {
        let name = field!(func, "attribute").map(|a| &src[a.byte_range()]).unwrap_or_default();
        return matches!(
            name,
            "matmul"
                | "mm"
                | "bmm"
                | "addmm"
                | "baddbmm"
                | "softmax"
                | "log_softmax"
                | "relu"
                | "gelu"
                | "sigmoid"
                | "tanh"
                | "exp"
                | "conv2d"
                | "linear"
                | "forward"
                | "clamp"
                | "clip"
                | "relu_"
                | "sigmoid_"
                | "tanh_"
                | "silu"
                | "log"
                | "sqrt"
                | "rsqrt"
                | "pow"
                | "cumsum"
                | "layer_norm"
                | "softplus"
        );
    }
    false
}
