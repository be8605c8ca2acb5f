//! KL107 timer-patch.

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::field;
use crate::model::{range_of, FileModel};

use super::{Reach, Rule, Scope};
use crate::model::candidate::{self, Imports};
use crate::model::NodeKind;

pub const RULE: Rule = Rule {
    code: "KL107",
    name: "timer-patch",
    severity: Severity::Error,
    summary: "assignments to `torch.cuda.Event`, `time.*`, `triton.testing.*` or the harness's names",
    doc: DOC,
    reach: Reach::Host,
    hygiene: true,
    check,
    per_node: Some(per_node),
};

const DOC: &str = r#"# KL107 timer-patch

## What it does
In a candidate file, reports assignments (and `setattr` calls) that replace
what the benchmark measures with: `torch.cuda.Event` and its methods,
`torch.cuda.synchronize`, anything in the `time` module, `triton.testing.*`,
KernelBench's modules (`kernelbench.*`), the running harness (`__main__.*`)
and `sys.modules`. Names are resolved through the file's imports, so
`import time as t; t.perf_counter = ...` is found too.

## Why is this bad?
A candidate that patches the timer reports whatever speedup it likes. No
kernel needs to replace a module's attribute.

## Example
```python
import torch
torch.cuda.Event.elapsed_time = lambda self, end: 0.001
```

## Use instead
Nothing: remove the assignment.
"#;

const TIMERS: &[&str] = &[
    "torch.cuda.Event",
    "torch.cuda.synchronize",
    "torch.cuda.Stream",
    "torch.cuda.current_stream",
    "time",
    "triton.testing",
    "kernelbench",
    "__main__",
    "sys.modules",
    "torch.cuda.Event.elapsed_time",
];

fn patched(q: &str) -> bool {
    TIMERS.iter().any(|t| q == *t || (q.starts_with(t) && q[t.len()..].starts_with('.')))
}

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    if !candidate::is_candidate(model) {
        return;
    }
    let imports = candidate::imports(model);
    for (range, target) in patches(model, &imports) {
        out.push(diagnostic(range, &target));
    }
}

/// The diagnostic for a patch of `target` at `range`.
fn diagnostic(range: crate::text::TextRange, target: &str) -> Diagnostic {
    RULE.diagnostic(
        range,
        format!(
            "this replaces `{target}`, which the benchmark measures with: the reported time would be whatever the patch says. Remove it"
        ),
    )
}

/// KL107's findings among `nodes`: each depends on its node and the file's imports alone.
fn per_node(src: &str, imports: &Imports, nodes: &[tree_sitter::Node]) -> Vec<Diagnostic> {
    patches_among(src, imports, nodes.iter().copied()).into_iter().map(|(r, target)| diagnostic(r, &target)).collect()
}

/// Every assignment or `setattr` that replaces a timing name: (where, the name).
fn patches(model: &FileModel, imports: &Imports) -> Vec<(crate::text::TextRange, String)> {
    // Assignments and calls in document order, as one walk of the tree meets them.
    let nodes = model.nodes();
    let mut candidates: Vec<tree_sitter::Node> = nodes.assignments.iter().chain(&nodes.calls).copied().collect();
    candidates.sort_by_key(|n| (n.start_byte(), std::cmp::Reverse(n.end_byte())));
    patches_among(model.src, imports, candidates)
}

/// [`patches`] among some nodes only (the others are skipped): what one
/// statement holds, for the incremental analysis. A finding depends on its
/// node and the file's imports alone.
fn patches_among<'a>(
    src: &str,
    imports: &Imports,
    candidates: impl IntoIterator<Item = tree_sitter::Node<'a>>,
) -> Vec<(crate::text::TextRange, String)> {
    let mut out = Vec::new();
    for n in candidates {
        match n.kind_name() {
            "assignment" | "augmented_assignment" => {
                let Some(left) = field!(n, "left") else { continue };
                let mut targets = vec![left];
                if matches!(left.kind_name(), "pattern_list" | "tuple_pattern") {
                    let mut cursor = left.walk();
                    targets = left.named_children(&mut cursor).collect();
                }
                for t in targets {
                    let t = if t.kind_name() == "subscript" { field!(t, "value").unwrap_or(t) } else { t };
                    if t.kind_name() != "attribute" {
                        continue;
                    }
                    let head = src[t.byte_range()].split('.').next().unwrap_or_default().trim();
                    if imports.full_name(head).is_none() {
                        continue;
                    }
                    if let Some(q) = imports.qualify(t, src).filter(|q| patched(q)) {
                        out.push((range_of(n), q));
                    }
                }
            }
            "call" => {
                // Only a bare name can qualify to `setattr`: most calls are
                // told apart without building their qualified callee.
                let Some(func) = field!(n, "function").filter(|f| f.kind_name() == "identifier") else { continue };
                let name = &src[func.byte_range()];
                if imports.full_name(name).unwrap_or(name) != "setattr" {
                    continue;
                }
                if imports.callee(n, src).as_deref() != Some("setattr") {
                    continue;
                }
                let Some(args) = field!(n, "arguments") else { continue };
                let (Some(object), Some(name)) = (args.named_child(0), args.named_child(1)) else { continue };
                let Some(q) = imports.qualify(object, src) else { continue };
                let attr = src[name.byte_range()].trim_matches(|c| c == '"' || c == '\'');
                let full = format!("{q}.{attr}");
                if patched(&full) {
                    out.push((range_of(n), full));
                }
            }
            _ => {}
        }
    }
    out
}
