//! KL006 shared-memory-over-limit.
//!
//! The estimate and the configurations are facts of the model
//! (`model::smem`); the shrink of the quick fix is `fix::shrink`.

use crate::config::GpuSpec;
use crate::diagnostic::{Diagnostic, Fix, Severity};
use crate::fix::shrink::{shrink_applicability, shrink_to_fit};
use crate::model::smem::{buffers, configs, dot_dims, elem_width, estimate, Tile};
use crate::text::group;

use super::{Reach, Rule, Scope};

pub const RULE: Rule = Rule {
    code: "KL006",
    name: "shared-memory-over-limit",
    severity: Severity::Error,
    summary: "A launch config's estimated shared memory exceeds the target GPU",
    doc: DOC,
    reach: Reach::Kernel,
    hygiene: false,
    check,
    per_node: None,
};

const DOC: &str = r#"# KL006 shared-memory-over-limit

## What it does
For kernels with a `tl.dot` pipeline, estimates the shared memory each
launch configuration needs (literal launch keywords, `triton.Config`
entries of `@triton.autotune`, constexpr defaults) and compares it with the
per-block limit of the target GPU (`target-gpu`, default `h100`):

    buffers × (BLOCK_M × BLOCK_K + BLOCK_K × BLOCK_N) × element bytes

where `buffers` is `num_stages` on Hopper's wgmma path (BLOCK_M a multiple
of 64) and `num_stages - 1` elsewhere, and the epilogue's scratch buffer is
taken into account. The formula was calibrated against the shared memory of
590 compiled Triton 3.6 kernels on an H100: it was never under, exact in 555.

The block dimensions are read off the `tl.dot` operands (the constexpr
sizes of the first operand's rows, the shared K, the second's columns), the
element size off the file: 1 byte for fp8 or int8 and 2 for fp16/bf16
named in the kernel, or the dtype every launching function names (fp32
included). With no dtype in sight 4 bytes is an assumption, and a config
over the limit only at that width is a hint that says so: an int8 or bf16
operand would fit. When the compile worker has compiled the kernel, its
figure replaces the estimate.

## Why is this bad?
A config over the limit does not launch: `OutOfResources: out of resource:
shared memory, Required: 102400, Hardware limit: 101376. Reducing block
sizes or num_stages may help.` In the runs this rule comes from it was 1%
over, the one repair attempt did not shrink the blocks, and the candidate was
lost. Limits per block (opt-in): H100/H200 232,448 B, A100 166,912 B,
L4 / RTX 30xx / 40xx 101,376 B, Turing 65,536 B.

## Example
```python
matmul_kernel[grid](a, b, c, M, N, K, BLOCK_M=256, BLOCK_N=256, BLOCK_K=128, num_stages=4)
```

## Use instead
```python
matmul_kernel[grid](a, b, c, M, N, K, BLOCK_M=256, BLOCK_N=256, BLOCK_K=32, num_stages=3)
```
The quick fix lowers `num_stages` first (it keeps the tile), then `BLOCK_K`,
then the larger of `BLOCK_M`/`BLOCK_N`, keeping powers of two and `tl.dot`'s
minimum of 16, until the estimate fits.
"#;

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    let settings = scope.settings;
    let gpu: &GpuSpec = settings.gpu();
    for k in scope.kernels {
        let Some(dims) = dot_dims(k, model) else { continue };
        let (m, n, kd) = &dims;
        let (bytes, shown) = elem_width(k, model);
        for cfg in configs(k, model, &[m.as_str(), n.as_str(), kd.as_str()]) {
            let Some(tile) = cfg.tile(&dims) else { continue };
            let Tile { m: bm, n: bn, k: bk, stages, .. } = tile;
            let need = estimate(tile, bytes, gpu.sm);
            let limit = gpu.smem_per_block as i64;
            if need <= limit {
                continue;
            }
            let message = format!(
                "{} needs about {} B of shared memory ({} buffers for {stages} stages × ({m}={bm} × {kd}={bk} + {kd}={bk} × {n}={bn}) × {bytes} B, {}), over the {} limit of {} B per block: the launch fails with OutOfResources",
                cfg.label,
                group(need),
                buffers(tile, gpu.sm),
                if shown { "the element width the file shows" } else { "an element width assumed: no operand dtype is visible" },
                gpu.name,
                group(limit)
            );
            let fix = shrink_to_fit(tile, bytes, gpu.sm, limit).and_then(|t| {
                let (edits, changed) = cfg.shrink_edits(&dims, tile, t)?;
                Some(Fix {
                    title: format!("Shrink to {} (about {} B)", changed.join(", "), group(estimate(t, bytes, gpu.sm)))
                        .into(),
                    applicability: shrink_applicability(tile, t),
                    edits,
                })
            });
            let mut d = RULE.diagnostic(cfg.at, message);
            // The autotuner skips a config that runs out of resources: worth knowing, not an error.
            // Over the limit only at an assumed width: what the operands are decides, and
            // nothing here shows it (an int8 or fp8 operand takes a quarter of it).
            if !shown && !cfg.from_autotune {
                d.severity = Severity::Hint;
                if let Some(stem) = d.message.strip_suffix(": the launch fails with OutOfResources") {
                    d.message =
                        format!("{stem}: the launch fails with OutOfResources if the operands are {bytes} B wide")
                            .into();
                }
            }
            if cfg.from_autotune {
                d.severity = Severity::Hint;
                if let Some(stem) = d.message.strip_suffix(": the launch fails with OutOfResources") {
                    d.message =
                        format!("{stem}: the autotuner skips this config (it would fail with OutOfResources)").into();
                }
            }
            out.push(d.with_fix(fix).with_related(k.name_range, format!("kernel `{}`", k.name)));
        }
    }
}
