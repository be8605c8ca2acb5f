//! KL010 host-sync-in-loop.

use crate::config::Settings;
use crate::diagnostic::{Diagnostic, Severity};
use crate::model::{range_of, FileModel};

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
        if !launches {
            continue;
        }
        // One diagnostic a line: `int(a[i].item() - a[j].item())` is one wait to fix, not two.
        let mut lines_seen: Vec<usize> = Vec::new();
        for sync in func.syncs.iter().filter(|s| !s.loops.is_empty()) {
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
