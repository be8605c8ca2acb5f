//! KL008 scalar-loop-no-dot.

use crate::analysis::model::FileModel;
use crate::config::Settings;
use crate::diagnostic::{Diagnostic, Severity};

use super::Rule;

pub const RULE: Rule = Rule {
    code: "KL008",
    name: "scalar-loop-no-dot",
    severity: Severity::Warning,
    summary: "Scalar multiply-accumulate loops (direct convolution) and no `tl.dot`",
    doc: DOC,
    check,
};

const DOC: &str = r#"# KL008 scalar-loop-no-dot

## What it does
Finds kernels with no `tl.dot` whose nested loops (`for ic` / `for ky` /
`for kx`) load operands and multiply-accumulate them (`acc += x * w`): a
direct convolution or a hand-written matrix product on the CUDA cores.

## Why is this bad?
Without `tl.dot` nothing runs on the tensor cores, and every product is
re-loaded from memory. In the runs this rule comes from, a scalar direct
convolution made VGG16 0.11x of PyTorch; PyTorch's convolution (cuDNN) with a
Triton GEMM and fused bias + ReLU reached 0.71x, and a Winograd kernel
written by the LLM only 0.60x.

## Example
```python
for ic in range(C_in):
    for ky in range(3):
        for kx in range(3):
            x = tl.load(x_ptr + ...)
            w = tl.load(w_ptr + ...)
            acc += x * w
```

## Use instead
Keep PyTorch's convolution and fuse the epilogue in Triton, or write the
convolution as an implicit GEMM: gather an input tile of shape
(BLOCK_M, BLOCK_K) over (ic, ky, kx) and multiply with `tl.dot` by a
(BLOCK_K, BLOCK_N) weight tile.
"#;

fn check(model: &FileModel, _settings: &Settings, out: &mut Vec<Diagnostic>) {
    for k in model.checked_kernels() {
        if k.tl_calls("dot").next().is_some() {
            continue;
        }
        // Multiply-accumulates at loop depth >= 2 whose loop nest loads.
        let mut reported_roots = Vec::new();
        for a in &k.assigns {
            if a.loops.len() < 2 {
                continue;
            }
            let value = model.text(a.value);
            let target = &a.target;
            let is_mac = (a.augmented && value.contains('*'))
                || (!a.augmented && value.contains('*') && value.trim_start().starts_with(&format!("{target} +")));
            if !is_mac {
                continue;
            }
            let innermost = *a.loops.last().unwrap_or(&0);
            if !k.calls_in_loop(innermost).any(|c| c.is_tl("load")) {
                continue;
            }
            let root = a.loops[0];
            if reported_roots.contains(&root) {
                continue;
            }
            reported_roots.push(root);
            let vars: Vec<String> =
                a.loops.iter().filter_map(|&l| k.loops[l].var.clone()).map(|v| format!("`{v}`")).collect();
            let message = format!(
                "scalar multiply-accumulate loops over {} in `{}` with no `tl.dot`: nothing runs on the tensor cores. Keep PyTorch's convolution (cuDNN) with a fused Triton epilogue, or write an implicit GEMM with `tl.dot`",
                vars.join(", "),
                k.name
            );
            out.push(RULE.diagnostic(k.loops[root].header_range, message));
        }
    }
}
