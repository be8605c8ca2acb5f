//! KL007 tensor-indexed-by-tensor.

use tree_sitter::Node;

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::field;
use crate::model::{collect_identifiers, range_of, FileModel, Kernel};

use super::{Reach, Rule, Scope};
use crate::model::NodeKind;

pub const RULE: Rule = Rule {
    code: "KL007",
    name: "tensor-indexed-by-tensor",
    severity: Severity::Error,
    summary: "A Triton tensor subscripted by an index tensor",
    doc: DOC,
    reach: Reach::Kernel,
    hygiene: false,
    check,
    per_node: None,
};

const DOC: &str = r#"# KL007 tensor-indexed-by-tensor

## What it does
Finds subscripts inside a kernel whose index is a value rather than `None`,
`:` or `...`: `vals[idx]`, `row[offs]`, `ptr[i]`.

## Why is this bad?
Triton tensors live in registers spread over threads; they cannot be
gathered by an index vector. Compilation fails with `unsupported tensor
index: int32[constexpr[64]]`. Only `None` (new axis), `:` and `...` are
allowed in a subscript.

## Example
```python
vals = tl.load(table_ptr + tl.arange(0, BLOCK))
out = vals[idx]
```

## Use instead
Address memory with pointer arithmetic and load what you need:
```python
out = tl.load(table_ptr + idx, mask=idx < n)
```
"#;

/// The variable of a `tl.static_range` loop: a constexpr in each unrolled
/// copy, so it may index a tuple (`ptrs[i]` over a tuple of pointers).
fn unrolled_var(model: &FileModel, k: &Kernel, name: &str) -> bool {
    k.loops.iter().any(|lp| {
        lp.var.as_deref() == Some(name)
            && lp.head.is_some_and(|h| {
                let f = if h.kind_name() == "call" { field!(h, "function").unwrap_or(h) } else { h };
                model.text(f).ends_with("static_range")
            })
    })
}

/// `tl.*` functions that return one block (not a tuple, as `tl.split` does).
const BLOCK_MAKERS: &[&str] = &[
    "load",
    "zeros",
    "full",
    "arange",
    "dot",
    "sum",
    "max",
    "min",
    "exp",
    "exp2",
    "log",
    "log2",
    "sigmoid",
    "where",
    "maximum",
    "minimum",
    "abs",
    "sqrt",
    "rsqrt",
    "cumsum",
    "reshape",
    "trans",
    "broadcast_to",
    "zeros_like",
    "full_like",
    "cast",
    "softmax",
    "fma",
    "clamp",
];

/// Whether every binding of `name` in the kernel is a block a `tl.*` function
/// makes, or arithmetic on such blocks (`x = tl.load(...) * 2`).
fn made_by_tl(model: &FileModel, k: &Kernel, name: &str, depth: usize) -> bool {
    if depth > 4 {
        return false;
    }
    let binds: Vec<_> = k.assigns.iter().filter(|a| a.target == name).collect();
    !binds.is_empty() && binds.iter().all(|a| !a.augmented && block_value(model, k, a.value, depth))
}

fn block_value(model: &FileModel, k: &Kernel, v: Node, depth: usize) -> bool {
    match v.kind_name() {
        "call" => {
            k.calls.iter().any(|c| c.node == v && c.tl_name.as_deref().is_some_and(|n| BLOCK_MAKERS.contains(&n)))
        }
        "binary_operator" => {
            let sides = [field!(v, "left"), field!(v, "right")];
            sides.iter().flatten().any(|s| block_value(model, k, *s, depth))
                && sides.iter().flatten().all(|s| s.kind_name() != "tuple")
        }
        "parenthesized_expression" => v.named_child(0).is_some_and(|i| block_value(model, k, i, depth)),
        "identifier" => made_by_tl(model, k, model.text(v), depth + 1),
        _ => false,
    }
}

/// Whether `name` is an object of a Triton extension rather than a Triton
/// tensor: it is never made by `tl`, and every use of it in the kernel is
/// `name[i]` handed straight to a function of another module
/// (`ext.barrier_wait(bars[slot], ...)`, an array of barriers or descriptors
/// indexed by a ring slot). Nothing shows it is a tensor, so indexing it is
/// that module's business.
fn extension_object(model: &FileModel, k: &Kernel, at: Node, name: &str) -> bool {
    if made_by_tl(model, k, name, 0) {
        return false;
    }
    let Some(body) = field!(k.node, "body") else { return false };
    let mut uses = Vec::new();
    crate::model::visit_nodes(body, &mut |n| {
        if n.kind_name() == "identifier" && model.text(n) == name {
            uses.push(n);
        }
    });
    let handed_to_extension = |u: &Node| {
        let Some(sub) = u.parent().filter(|p| p.kind_name() == "subscript" && field!(p, "value") == Some(*u)) else {
            return false;
        };
        let mut arg = sub;
        if arg.parent().is_some_and(|p| p.kind_name() == "keyword_argument") {
            arg = arg.parent().unwrap_or(arg);
        }
        let Some(call) = arg.parent().filter(|p| p.kind_name() == "argument_list").and_then(|a| a.parent()) else {
            return false;
        };
        let Some(func) = field!(call, "function").filter(|f| f.kind_name() == "attribute") else { return false };
        let mut root = func;
        while let Some(o) = field!(root, "object") {
            root = o;
        }
        let root = model.text(root);
        root.chars().all(|c| c.is_alphanumeric() || c == '_')
            && !model.is_tl_alias(root)
            && !model.triton_aliases.iter().any(|a| a == root)
    };
    uses.iter().any(|u| *u == at) && uses.iter().all(handed_to_extension)
}

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    for k in scope.kernels {
        for (sub, _) in &k.subscripts {
            let Some(value) = field!(sub, "value") else { continue };
            if value.kind_name() != "identifier" {
                continue;
            }
            let name = model.text(value);
            let is_tensor = k.param(name).is_some_and(|p| !p.constexpr) || k.assigns.iter().any(|a| a.target == name);
            if !is_tensor || extension_object(model, k, value, name) {
                continue;
            }
            let mut c = sub.walk();
            let offending = sub.children_by_field_name("subscript", &mut c).find(|idx| {
                if matches!(idx.kind_name(), "none" | "slice" | "ellipsis") {
                    return false;
                }
                // `row[0]`: a constant picks one element, which a block made by
                // `tl.load`, `tl.zeros`... does not allow either (a tuple does).
                if idx.kind_name() == "integer" {
                    return made_by_tl(model, k, name, 0);
                }
                let mut ids = Vec::new();
                collect_identifiers(*idx, model.src, &mut ids);
                // A constexpr or an unrolled loop's variable may index a tuple, not a block.
                ids.iter().any(|i| i != "None" && !k.is_constexpr(i) && !unrolled_var(model, k, i))
                    || (!ids.is_empty() && made_by_tl(model, k, name, 0))
            });
            let Some(idx) = offending else { continue };
            let constant = idx.kind_name() == "integer" || {
                let mut ids = Vec::new();
                collect_identifiers(idx, model.src, &mut ids);
                ids.iter().all(|i| k.is_constexpr(i) || unrolled_var(model, k, i))
            };
            let at = model.text(idx).trim();
            let message = if constant {
                format!(
                    "`{name}` is a Triton tensor indexed by the constant `{at}`: compilation fails with \"unsupported tensor index\". Load that element through pointer arithmetic instead (`tl.load(ptr + {at})`), or reduce (`tl.sum(tl.where(offs == {at}, {name}, 0), axis=0)`)"
                )
            } else {
                format!(
                    "`{name}` is a Triton tensor indexed by the tensor `{at}`: compilation fails with \"unsupported tensor index\". Load through pointer arithmetic instead: `tl.load(ptr + {at})`"
                )
            };
            out.push(RULE.diagnostic(range_of(*sub), message));
        }
    }
}
