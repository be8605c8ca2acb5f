//! KL006 shared-memory-over-limit.

use crate::analysis::field;
use std::collections::HashMap;

use tree_sitter::Node;

use crate::analysis::model::{call_arguments, parse_int, range_of, FileModel, Kernel};
use crate::config::{GpuSpec, Settings};
use crate::diagnostic::{Applicability, Diagnostic, Edit, Fix, Severity};
use crate::text::TextRange;

use super::Rule;

pub const RULE: Rule = Rule {
    code: "KL006",
    name: "shared-memory-over-limit",
    severity: Severity::Error,
    summary: "A launch config's estimated shared memory exceeds the target GPU",
    doc: DOC,
    check,
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
element size off the kernel (2 bytes when it works in fp16/bf16, else 4).

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

/// Triton's default `num_stages` on NVIDIA GPUs.
pub const DEFAULT_STAGES: i64 = 3;

/// Triton's default `num_warps`.
pub const DEFAULT_WARPS: i64 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tile {
    pub m: i64,
    pub n: i64,
    pub k: i64,
    pub stages: i64,
    pub warps: i64,
}

/// Estimated shared memory, in bytes, of a `tl.dot` pipeline on a GPU of
/// compute capability `sm`, calibrated against Triton 3.6 on an H100 over 590
/// configs (`scripts/smem_calibration.md`: never under, median error 0 %):
/// Hopper's wgmma path keeps one A and one B buffer per stage, the others
/// `num_stages - 1`; the epilogue's layout conversion reuses the operand
/// buffers, so the total is the larger of the two.
pub fn estimate(tile: Tile, elem_bytes: i64, sm: u32) -> i64 {
    let wgmma = sm >= 90 && tile.m % 64 == 0 && tile.warps % 4 == 0;
    let buffers = if wgmma { tile.stages.max(1) } else { (tile.stages - 1).max(1) };
    let operands = buffers * (tile.m * tile.k + tile.k * tile.n) * elem_bytes;
    let scratch = if elem_bytes <= 2 { 16_384 } else { 65_536 };
    let epilogue = (tile.m * tile.n * elem_bytes).min((tile.warps / 4).max(1) * scratch);
    operands.max(epilogue)
}

/// Buffers per operand the pipeline keeps, for the message.
fn buffers(tile: Tile, sm: u32) -> i64 {
    let wgmma = sm >= 90 && tile.m % 64 == 0 && tile.warps % 4 == 0;
    if wgmma {
        tile.stages.max(1)
    } else {
        (tile.stages - 1).max(1)
    }
}

/// The tile that fits `limit` and keeps the most work per program: the
/// largest output tile (BLOCK_M × BLOCK_N), then the deepest pipeline
/// (BLOCK_K × stages), then the most stages. Sizes stay powers of two and at
/// least 16 (`tl.dot`'s minimum); nothing grows. `None` when nothing fits.
pub fn shrink_to_fit(tile: Tile, elem_bytes: i64, sm: u32, limit: i64) -> Option<Tile> {
    let halvings = |v: i64| {
        let mut out = vec![v];
        let mut x = v;
        while x / 2 >= 16 && x % 2 == 0 {
            x /= 2;
            out.push(x);
        }
        out
    };
    let mut best: Option<(Tile, (i64, i64, i64))> = None;
    for m in halvings(tile.m) {
        for n in halvings(tile.n) {
            for k in halvings(tile.k) {
                for stages in 1..=tile.stages.max(1) {
                    let t = Tile { m, n, k, stages, warps: tile.warps };
                    if estimate(t, elem_bytes, sm) > limit {
                        continue;
                    }
                    let score = (m * n, k * stages, stages);
                    if best.is_none_or(|(_, s)| score > s) {
                        best = Some((t, score));
                    }
                }
            }
        }
    }
    best.map(|(t, _)| t)
}

/// Names of the constexpr parameters that size the first `tl.dot`: (M, N, K).
pub fn dot_dims(k: &Kernel, model: &FileModel) -> Option<(String, String, String)> {
    let src = model.src;
    let dot = k.tl_calls("dot").next()?;
    let (a, b) = (dot.arg(0, "input")?, dot.arg(1, "other")?);
    let sizes: Vec<String> = k
        .tl_calls("arange")
        .filter_map(|c| c.arg(1, "end"))
        .map(|e| model.text(e).trim().to_string())
        .filter(|t| k.is_constexpr(t))
        .collect();
    let in_sizes = |n: Node| -> Vec<String> {
        let deps = k.deps(n, src);
        let mut v: Vec<String> = sizes.iter().filter(|s| deps.contains(s.as_str())).cloned().collect();
        v.sort();
        v.dedup();
        v
    };
    let (da, db) = (in_sizes(a), in_sizes(b));
    let shared: Vec<&String> = da.iter().filter(|x| db.contains(x)).collect();
    let only_a: Vec<&String> = da.iter().filter(|x| !db.contains(x)).collect();
    let only_b: Vec<&String> = db.iter().filter(|x| !da.contains(x)).collect();
    if let ([kk], [m], [n]) = (shared.as_slice(), only_a.as_slice(), only_b.as_slice()) {
        return Some(((*m).clone(), (*n).clone(), (*kk).clone()));
    }
    // Fall back on the usual names.
    let find = |suffix: &str| {
        k.params
            .iter()
            .find(|p| p.constexpr && (p.name.ends_with(&format!("_{suffix}")) || p.name == format!("BLOCK{suffix}")))
            .map(|p| p.name.clone())
    };
    Some((find("M")?, find("N")?, find("K")?))
}

/// Bytes per operand element: 1 for fp8, 2 for fp16/bf16 (named in the
/// kernel, or in every host function that launches it), else 4.
pub(crate) fn elem_bytes(k: &Kernel, model: &FileModel) -> i64 {
    let text = model.text(k.node);
    if text.contains("float8") {
        return 1;
    }
    if text.contains("float16") || text.contains("bfloat16") || text.contains("fp16") {
        return 2;
    }
    let half = |t: &str| t.contains("float16") || t.contains("bfloat16") || t.contains(".half()");
    let launchers = model.launches.iter().filter(|l| l.kernel == k.name).map(|l| l.host_fn);
    let mut launchers = launchers.peekable();
    if launchers.peek().is_some() && launchers.all(|f| f > 0 && half(model.text(model.host_fns[f].node))) {
        return 2;
    }
    4
}

/// One place a configuration is written, with the nodes holding each value.
pub(crate) struct Config<'a> {
    pub label: String,
    pub at: TextRange,
    /// The launch or `triton.Config(...)` call.
    pub node: Node<'a>,
    /// Where a missing keyword can be added: just before the call's closing parenthesis.
    pub insert_at: usize,
    /// Value by name, with the integer literal that holds it when there is one.
    pub values: HashMap<String, (i64, Option<Node<'a>>)>,
    /// An entry of `@triton.autotune(configs=[...])`.
    pub from_autotune: bool,
}

/// The names of the block sizes of a `tl.dot` pipeline: (M, N, K).
pub(crate) type Dims = (String, String, String);

impl Config<'_> {
    /// The tile this configuration launches, when every size is known.
    pub fn tile(&self, (m, n, kd): &Dims) -> Option<Tile> {
        let get = |name: &str| self.values.get(name).map(|v| v.0);
        Some(Tile {
            m: get(m)?,
            n: get(n)?,
            k: get(kd)?,
            stages: get("num_stages").unwrap_or(DEFAULT_STAGES),
            warps: get("num_warps").unwrap_or(DEFAULT_WARPS),
        })
    }

    /// The edits that turn this configuration's `old` tile into `new`, and
    /// `NAME=value` for each changed value. `None` when a changed value is not
    /// written as a literal this configuration owns.
    pub fn shrink_edits(&self, (m, n, kd): &Dims, old: Tile, new: Tile) -> Option<(Vec<Edit>, Vec<String>)> {
        let mut edits = Vec::new();
        let mut changed = Vec::new();
        for (name, before, after) in [
            (m.as_str(), old.m, new.m),
            (n.as_str(), old.n, new.n),
            (kd.as_str(), old.k, new.k),
            ("num_stages", old.stages, new.stages),
        ] {
            if before == after {
                continue;
            }
            match self.values.get(name).and_then(|v| v.1) {
                Some(node) => edits.push(Edit { range: range_of(node), new_text: after.to_string() }),
                // `num_stages` left at Triton's default: add it to the launch or Config.
                None if name == "num_stages" => edits.push(Edit {
                    range: TextRange::new(self.insert_at, self.insert_at),
                    new_text: format!(", num_stages={after}"),
                }),
                None => return None,
            }
            changed.push(format!("{name}={after}"));
        }
        Some((edits, changed))
    }
}

pub(crate) fn configs<'a>(k: &Kernel<'a>, model: &FileModel<'a>, names: &[&str]) -> Vec<Config<'a>> {
    let mut out = Vec::new();
    let defaults: HashMap<String, (i64, Option<Node<'a>>)> = k
        .params
        .iter()
        .filter_map(|p| Some((p.name.clone(), (parse_int(model.text(p.default?).trim())?, p.default))))
        .collect();
    for d in &k.decorators {
        if d.kind() != "call" || !model.text(field!(d, "function").unwrap_or(*d)).ends_with("autotune") {
            continue;
        }
        let (_, kwargs) = call_arguments(*d, model.src);
        let Some((_, list)) = kwargs.iter().find(|(n, _)| n == "configs") else { continue };
        let list = resolve_module_list(model, *list);
        let mut c = list.walk();
        for entry in list.named_children(&mut c).filter(|e| e.kind() == "call") {
            let (args, kw) = call_arguments(entry, model.src);
            let mut values = defaults.clone();
            if let Some(dict) = args.first().filter(|d| d.kind() == "dictionary") {
                let mut dc = dict.walk();
                for pair in dict.named_children(&mut dc).filter(|p| p.kind() == "pair") {
                    let (Some(key), Some(val)) = (field!(pair, "key"), field!(pair, "value")) else { continue };
                    let key = model.text(key).trim_matches(|c| c == '"' || c == '\'').to_string();
                    if let Some(v) = parse_int(model.text(val).trim()) {
                        values.insert(key, (v, Some(val)));
                    }
                }
            }
            for (name, val) in kw {
                if let Some(v) = parse_int(model.text(val).trim()) {
                    values.insert(name, (v, Some(val)));
                }
            }
            out.push(Config {
                label: "this `triton.Config`".to_string(),
                at: range_of(entry),
                node: entry,
                insert_at: closing_paren(entry),
                values,
                from_autotune: true,
            });
        }
    }
    let autotuned = !out.is_empty();
    for launch in model.launches.iter().filter(|l| l.kernel == k.name) {
        let mut values = defaults.clone();
        for (name, val) in &launch.kwargs {
            if let Some(v) = model.eval_int(launch.host_fn, *val, 0) {
                let literal = model.int_literal_node(launch.host_fn, *val);
                values.insert(name.clone(), (v, literal));
            }
        }
        if autotuned && !names.iter().any(|n| launch.kwarg(n).is_some()) {
            continue;
        }
        out.push(Config {
            label: format!("this launch of `{}`", k.name),
            at: launch.name_range,
            node: launch.node,
            insert_at: closing_paren(launch.node),
            values,
            from_autotune: false,
        });
    }
    out
}

/// Offset of the `)` that closes a call's argument list, after any trailing comma.
fn closing_paren(call: Node) -> usize {
    let Some(args) = field!(call, "arguments") else { return call.end_byte() };
    let end = args.end_byte().saturating_sub(1);
    let mut c = args.walk();
    let last = args.named_children(&mut c).last();
    last.map(|l| l.end_byte()).unwrap_or(end)
}

fn resolve_module_list<'a>(model: &FileModel<'a>, node: Node<'a>) -> Node<'a> {
    if node.kind() == "identifier" {
        let name = model.text(node);
        if let Some(a) = model.host_fns[0].assigns.iter().find(|a| a.target == name) {
            return a.value;
        }
    }
    node
}

fn check(model: &FileModel, settings: &Settings, out: &mut Vec<Diagnostic>) {
    let gpu: &GpuSpec = settings.gpu();
    for k in model.checked_kernels() {
        let Some(dims) = dot_dims(k, model) else { continue };
        let (m, n, kd) = &dims;
        let bytes = elem_bytes(k, model);
        for cfg in configs(k, model, &[m.as_str(), n.as_str(), kd.as_str()]) {
            let Some(tile) = cfg.tile(&dims) else { continue };
            let Tile { m: bm, n: bn, k: bk, stages, .. } = tile;
            let need = estimate(tile, bytes, gpu.sm);
            let limit = gpu.smem_per_block as i64;
            if need <= limit {
                continue;
            }
            let message = format!(
                "{} needs about {} B of shared memory ({} buffers for {stages} stages × ({m}={bm} × {kd}={bk} + {kd}={bk} × {n}={bn}) × {bytes} B), over the {} limit of {} B per block: the launch fails with OutOfResources",
                cfg.label,
                group(need),
                buffers(tile, gpu.sm),
                gpu.name,
                group(limit)
            );
            let fix = shrink_to_fit(tile, bytes, gpu.sm, limit).and_then(|t| {
                let (edits, changed) = cfg.shrink_edits(&dims, tile, t)?;
                Some(Fix {
                    title: format!("Shrink to {} (about {} B)", changed.join(", "), group(estimate(t, bytes, gpu.sm))),
                    applicability: shrink_applicability(tile, t),
                    edits,
                })
            });
            let mut d = RULE.diagnostic(cfg.at, message);
            // The autotuner skips a config that runs out of resources: worth knowing, not an error.
            if cfg.from_autotune {
                d.severity = Severity::Hint;
                if let Some(stem) = d.message.strip_suffix(": the launch fails with OutOfResources") {
                    d.message = format!("{stem}: the autotuner skips this config (it would fail with OutOfResources)");
                }
            }
            out.push(d.with_fix(fix).with_related(k.name_range, format!("kernel `{}`", k.name)));
        }
    }
}

/// Fewer stages keep the tile and the kernel's results: safe. Smaller blocks
/// change what each program computes, which a kernel may depend on: review.
pub(crate) fn shrink_applicability(old: Tile, new: Tile) -> Applicability {
    if (old.m, old.n, old.k) == (new.m, new.n, new.k) {
        Applicability::Safe
    } else {
        Applicability::NeedsReview
    }
}

/// 232448 -> "232,448".
pub fn group(v: i64) -> String {
    let s = v.abs().to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if v < 0 {
        format!("-{out}")
    } else {
        out
    }
}
