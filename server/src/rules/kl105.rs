//! KL105 side-stream-or-thread.

use tree_sitter::Node;

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::field;
use crate::model::{inside, range_of, FileModel};

use super::{Reach, Rule, Scope};
use crate::model::candidate;
use crate::model::NodeKind;

pub const RULE: Rule = Rule {
    code: "KL105",
    name: "side-stream-or-thread",
    severity: Severity::Error,
    summary: "work issued on a CUDA stream other than the current one, or from threads",
    doc: DOC,
    reach: Reach::Host,
    hygiene: true,
    check,
    per_node: None,
};

const DOC: &str = r#"# KL105 side-stream-or-thread

## What it does
In a candidate file's host code, reports `with torch.cuda.stream(s):` and
`torch.cuda.set_stream(s)` for any stream other than
`torch.cuda.current_stream()` / `torch.cuda.default_stream()`, and work
started on threads or processes (`threading.Thread`, `threading.Timer`,
`concurrent.futures.ThreadPoolExecutor` / `ProcessPoolExecutor`,
`multiprocessing`).

## Why is this bad?
The benchmark records CUDA events on the current stream. Kernels queued on
another stream, or launched by a thread after `forward` has returned, run
outside the timed region: the timing shows only the launch overhead, and the
correctness check may read the output before it is written.

## Example
```python
def forward(self, x):
    out = torch.empty_like(x)
    with torch.cuda.stream(self.side):
        relu_kernel[grid](x, out, x.numel(), BLOCK=1024)
    return out
```

## Use instead
Launch on the current stream, from the calling thread:
```python
def forward(self, x):
    out = torch.empty_like(x)
    relu_kernel[grid](x, out, x.numel(), BLOCK=1024)
    return out
```
"#;

const THREADS: &[&str] = &[
    "threading.Thread",
    "threading.Timer",
    "concurrent.futures.ThreadPoolExecutor",
    "concurrent.futures.ProcessPoolExecutor",
    "concurrent.futures.thread.ThreadPoolExecutor",
    "_thread.start_new_thread",
    "multiprocessing.Process",
    "multiprocessing.Pool",
];

/// Whether the stream that `stream_call` (`torch.cuda.Stream()`) makes is
/// entered with `with` in `scope` (a `torch.cuda.Stream` is its own context
/// manager): `with torch.cuda.Stream():`, or `s = torch.cuda.Stream()` (or
/// `self.s = ...`) and then `with s:` (`with self.s:`) in the same function.
fn entered_by_with(model: &FileModel, scope: Node, stream_call: Node) -> bool {
    let bound: Option<&str> = stream_call.parent().and_then(|p| {
        (p.kind_name() == "assignment" && field!(p, "right") == Some(stream_call))
            .then(|| field!(p, "left").map(|l| model.text(l)))
            .flatten()
    });
    let mut found = false;
    crate::model::visit_nodes(scope, &mut |n| {
        if found || n.kind_name() != "with_item" {
            return;
        }
        let Some(value) = field!(n, "value") else { return };
        found = value == stream_call || bound.is_some_and(|b| model.text(value) == b);
    });
    found
}

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    if !candidate::is_candidate(model) {
        return;
    }
    let imports = candidate::imports(model);
    let src = model.src;
    for &scope in candidate::candidate_host_nodes(model) {
        for n in inside(&model.nodes().calls, scope) {
            let Some(callee) = imports.callee(n, src) else { continue };
            if matches!(callee.as_str(), "torch.cuda.stream" | "torch.cuda.set_stream" | "torch.cuda.StreamContext") {
                let arg = field!(n, "arguments").and_then(|a| a.named_child(0));
                let current = arg.is_some_and(|a| {
                    a.kind_name() == "call"
                        && imports.callee(a, src).is_some_and(|c| {
                            matches!(c.as_str(), "torch.cuda.current_stream" | "torch.cuda.default_stream")
                        })
                });
                if current {
                    continue;
                }
                let message = format!(
                    "`{}` issues the work on another CUDA stream: the benchmark's events on the current stream do not time it. Launch on the current stream",
                    model.text(n)
                );
                out.push(RULE.diagnostic(range_of(n), message));
            } else if callee == "torch.cuda.Stream" && entered_by_with(model, scope, n) {
                let message = format!(
                    "`with` on `{}`, a new CUDA stream, issues the work in its block on that stream: the benchmark's events on the current stream do not time it. Launch on the current stream",
                    model.text(n)
                );
                out.push(RULE.diagnostic(range_of(n), message));
            } else if THREADS.contains(&callee.as_str()) || callee.starts_with("multiprocessing.") {
                let message = format!(
                    "`{callee}` runs work on another thread or process: kernels it launches may run outside the timed region. Launch from the calling thread"
                );
                out.push(RULE.diagnostic(range_of(n), message));
            }
        }
    }
}
