//! KL010 host-sync-in-loop.

use tree_sitter::Node;

use crate::config::Settings;
use crate::diagnostic::{Diagnostic, Severity};
use crate::model::{field, range_of, FileModel, HostFn};

use super::Rule;

pub const RULE: Rule = Rule {
    code: "KL010",
    name: "host-sync-in-loop",
    severity: Severity::Warning,
    summary: "`.item()`, `.cpu()`, `torch.cuda.synchronize()` inside a forward loop",
    doc: DOC,
    check,
};

const DOC: &str = r#"# KL010 host-sync-in-loop

## What it does
Finds calls that wait for the GPU (`.item()`, `.cpu()`, `.tolist()`,
`.numpy()`, `torch.cuda.synchronize()`) inside a loop of `forward` or of a
function that launches kernels.

Not reported: test and benchmark code, where waiting is the point (a
function named `test*` or `bench*`, a method of a `Test*` class, anything
under `if __name__ == "__main__":`), and a call on a value that is on the
CPU already (`torch.tensor(lengths).cumsum(0).tolist()`: a tensor built
without `device=`, or what `.cpu()` returned).

## Why is this bad?
Each one stops the CPU until every queued kernel has finished, so the GPU
idles while Python prepares the next launch; inside a loop that cost is paid
every iteration, and launch latency is no longer hidden. It also makes
CUDA-graph capture impossible.

## Example
```python
for it in range(self.iters):
    step_kernel[grid](x, res, n, BLOCK=1024)
    if res.item() < tol:
        break
```

## Use instead
Keep the decision on the GPU (a fixed iteration count, or a flag the kernel
reads), or check once after the loop.
"#;

fn check(model: &FileModel, _settings: &Settings, out: &mut Vec<Diagnostic>) {
    for (f, func) in model.host_fns.iter().enumerate() {
        if func.syncs.is_empty() {
            continue;
        }
        let launches = func.name == "forward" || !model.launches_reached(f).is_empty();
        if !launches || is_test_or_benchmark(func) {
            continue;
        }
        // One diagnostic a line: `int(a[i].item() - a[j].item())` is one wait to fix, not two.
        let mut lines_seen: Vec<usize> = Vec::new();
        for sync in func.syncs.iter().filter(|s| !s.loops.is_empty()) {
            if under_main_guard(model, sync.node) || on_cpu_already(model, func, sync.node) {
                continue;
            }
            let line_start = model.src[..sync.node.start_byte()].rfind('\n').map_or(0, |i| i + 1);
            if lines_seen.contains(&line_start) {
                continue;
            }
            lines_seen.push(line_start);
            let l = *sync.loops.last().unwrap_or(&0);
            let message = format!(
                "`{}` inside a loop in `{}` waits for the GPU on every iteration: the GPU idles while Python prepares the next launch. Keep the check on the GPU or move it after the loop",
                sync.what, func.name
            );
            out.push(
                RULE.diagnostic(range_of(sync.node), message).with_related(func.loops[l].header_range, "the loop"),
            );
        }
    }
}

/// Tests and benchmarks wait for the GPU on purpose: to time a call, or to
/// read back an error to assert on.
fn is_test_or_benchmark(func: &HostFn) -> bool {
    let name = func.name.to_ascii_lowercase();
    name.starts_with("test")
        || name.starts_with("bench")
        || name.ends_with("_benchmark")
        || func.class.as_deref().is_some_and(|c| c.starts_with("Test"))
}

/// Inside `if __name__ == "__main__":`, the code a file runs as a script (a demo, a timing loop).
fn under_main_guard(model: &FileModel, node: Node) -> bool {
    let mut at = node.parent();
    while let Some(n) = at {
        if n.kind() == "if_statement" {
            let cond: String = field!(n, "condition")
                .map(|c| model.text(c).chars().filter(|ch| !ch.is_whitespace()).collect())
                .unwrap_or_default();
            let main = ["\"__main__\"", "'__main__'"];
            if main.iter().any(|m| cond == format!("__name__=={m}") || cond == format!("{m}==__name__")) {
                return true;
            }
        }
        at = n.parent();
    }
    false
}

/// Tensor factories that build on the CPU unless given `device=`.
const FACTORIES: &[&str] = &[
    "tensor",
    "as_tensor",
    "from_numpy",
    "arange",
    "zeros",
    "ones",
    "empty",
    "full",
    "linspace",
    "randn",
    "rand",
    "randint",
    "randperm",
];
/// Methods and `torch.*` functions whose result lives where their input does.
const SAME_DEVICE: &[&str] = &[
    "cumsum",
    "cumprod",
    "sum",
    "prod",
    "max",
    "min",
    "amax",
    "amin",
    "mean",
    "flatten",
    "view",
    "reshape",
    "int",
    "long",
    "float",
    "double",
    "clone",
    "contiguous",
    "diff",
    "sort",
    "argsort",
    "flip",
    "abs",
    "tolist",
    "numpy",
];

/// `sync` (a `.item()`, `.tolist()`, `.numpy()` or `.cpu()` call) reads a value
/// that is on the CPU already, so it waits for nothing.
fn on_cpu_already(model: &FileModel, func: &HostFn, sync: Node) -> bool {
    let Some(receiver) = field!(sync, "function").filter(|f| f.kind() == "attribute").and_then(|f| field!(f, "object"))
    else {
        return false;
    };
    on_cpu(model, func, receiver, 0)
}

fn on_cpu(model: &FileModel, func: &HostFn, value: Node, depth: usize) -> bool {
    if depth > 8 {
        return false;
    }
    match value.kind() {
        "parenthesized_expression" => value.named_child(0).is_some_and(|v| on_cpu(model, func, v, depth + 1)),
        "identifier" => {
            // Every binding of the name in this function is a CPU value (and there is one).
            let name = model.text(value);
            let mut values = func.assigns.iter().filter(|a| a.target == name).peekable();
            values.peek().is_some() && values.all(|a| !a.augmented && on_cpu(model, func, a.value, depth + 1))
        }
        "call" => {
            let Some(function) = field!(value, "function") else { return false };
            let args = field!(value, "arguments");
            let has_device = args.is_some_and(|a| {
                let mut c = a.walk();
                let found = a.named_children(&mut c).any(|k| {
                    k.kind() == "keyword_argument" && field!(k, "name").is_some_and(|n| model.text(n) == "device")
                });
                found
            });
            let first_arg = args.and_then(|a| a.named_child(0)).filter(|a| a.kind() != "keyword_argument");
            match function.kind() {
                "attribute" => {
                    let (Some(object), Some(attr)) = (field!(function, "object"), field!(function, "attribute")) else {
                        return false;
                    };
                    let (object_text, attr) = (model.text(object), model.text(attr));
                    if object_text == "torch" {
                        if FACTORIES.contains(&attr) {
                            return !has_device;
                        }
                        return SAME_DEVICE.contains(&attr)
                            && first_arg.is_some_and(|a| on_cpu(model, func, a, depth + 1));
                    }
                    match attr {
                        "cpu" | "numpy" => true,
                        a if SAME_DEVICE.contains(&a) => on_cpu(model, func, object, depth + 1),
                        _ => false,
                    }
                }
                _ => false,
            }
        }
        _ => false,
    }
}
