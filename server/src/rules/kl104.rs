//! KL104 output-reused-across-calls.

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::range_of;

use super::{Reach, Rule, Scope};
use crate::model::candidate;

pub const RULE: Rule = Rule {
    code: "KL104",
    name: "output-reused-across-calls",
    severity: Severity::Error,
    summary: "`forward` returns a value kept on `self` from an earlier call",
    doc: DOC,
    reach: Reach::Host,
    hygiene: true,
    check,
    per_node: None,
};

const DOC: &str = r#"# KL104 output-reused-across-calls

## What it does
In a candidate file, reports a value that `ModelNew.forward` (or a method
or helper it calls) returns when it comes (through local names, subscripts
and views) from an attribute of `self` that a method other than `__init__`
stores into: `self.out`,
`self.cache[key]`, keyed on the inputs or not. A buffer allocated once and
handed to a kernel launch in this call, which the kernel rewrites, is not
this rule.

## Why is this bad?
The second and later calls return the first call's result without
computing anything: the timing loop measures a dictionary look-up, and with
a key built from shapes or `data_ptr()` the correctness check can pass on
stale data. KernelBench's evaluator flags speedups over 10x for this reason.

## Example
```python
def forward(self, x):
    key = (x.shape, x.data_ptr())
    if key in self.cache:
        return self.cache[key]
    out = torch.empty_like(x)
    relu_kernel[grid](x, out, x.numel(), BLOCK=1024)
    self.cache[key] = out
    return out
```

## Use instead
Compute the output on every call; reuse allocations, never results:
```python
def forward(self, x):
    out = torch.empty_like(x)
    relu_kernel[grid](x, out, x.numel(), BLOCK=1024)
    return out
```
"#;

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    if !candidate::is_candidate(model) {
        return;
    }
    let Some(forward) = candidate::method(model, "ModelNew", "forward") else { return };
    let src = model.src;
    let stored = candidate::self_stores(model);
    if stored.is_empty() {
        return;
    }
    for f in candidate::reachable(model, forward) {
        let func = model.host_fns[f].node;
        let launched: Vec<String> = model
            .launches
            .iter()
            .filter(|l| range_of(func).contains_range(range_of(l.node)))
            .flat_map(|l| l.args.iter().map(|a| model.text(*a).to_string()))
            .collect();
        for (ret, value) in candidate::returns(func) {
            for origin in candidate::origins(model, func, value, ret.start_byte()) {
                // What a method this one returns from returns is checked in that method.
                if !range_of(func).contains_range(range_of(origin)) {
                    continue;
                }
                let Some(attr) = candidate::self_attr(origin, src) else { continue };
                let Some((_, at)) = stored.iter().find(|(a, _)| a == attr) else { continue };
                // Stored earlier in this same call: the value was just computed.
                let fresh = stored
                    .iter()
                    .any(|(a, r)| a == attr && range_of(func).contains_range(*r) && r.end <= ret.start_byte());
                if fresh {
                    continue;
                }
                // A buffer this call's kernel writes is an output computed now.
                let returned = model.text(value);
                if launched.iter().any(|a| a == model.text(origin) || a == returned) {
                    continue;
                }
                let message = format!(
                "`forward` returns `self.{attr}`, which an earlier call stored: later calls return that result without computing it, and the timing measures a look-up. Compute the output on every call"
            );
                out.push(RULE.diagnostic(range_of(ret), message).with_related(*at, "stored here"));
            }
        }
    }
}
