//! The shared memory of a `tl.dot` pipeline and the launch configurations
//! that size it: which constexpr parameters are the block sizes (M, N, K),
//! how many bytes an operand element takes, every place a configuration is
//! written (a launch's keywords, a `triton.Config` of `@triton.autotune`, the
//! constexpr defaults) and the estimate of what a tile needs, calibrated
//! against Triton 3.6 (`scripts/smem_calibration.md`). KL006 compares the
//! estimate with the GPU's limit; `fix::shrink` finds a tile that fits.

use std::collections::HashMap;

use tree_sitter::Node;

use super::{call_arguments, parse_int, range_of, FileModel, Kernel};
use crate::model::NodeKind;
use crate::text::TextRange;

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
pub fn buffers(tile: Tile, sm: u32) -> i64 {
    let wgmma = sm >= 90 && tile.m % 64 == 0 && tile.warps % 4 == 0;
    if wgmma {
        tile.stages.max(1)
    } else {
        (tile.stages - 1).max(1)
    }
}

/// Names of the constexpr parameters that size the first `tl.dot`: (M, N, K).
pub(crate) fn dot_dims(k: &Kernel, model: &FileModel) -> Option<(String, String, String)> {
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
            .map(|p| p.name.to_string())
    };
    Some((find("M")?, find("N")?, find("K")?))
}

/// Bytes per operand element: 1 for fp8 and int8, 2 for fp16/bf16, 4 for
/// fp32 (named in the kernel, or in every host function that launches it),
/// else 4, assumed.
pub(crate) fn elem_bytes(k: &Kernel, model: &FileModel) -> i64 {
    elem_width(k, model).0
}

/// The width a dtype names, the narrowest first: 1, 2 or 4.
fn named_width(t: &str) -> Option<i64> {
    if t.contains("float8") || t.contains("int8") || t.contains("fp8") {
        return Some(1);
    }
    if t.contains("float16") || t.contains("bfloat16") || t.contains("fp16") || t.contains(".half()") {
        return Some(2);
    }
    if t.contains("float32") || t.contains(".float()") || t.contains("tf32") {
        return Some(4);
    }
    None
}

/// [`elem_bytes`], and whether the file shows it: the kernel names an
/// operand dtype (fp8, int8, fp16, bf16; fp32 does not count there, as the
/// accumulator is fp32 whatever the operands), or every host function that
/// launches it does (fp32 included), or the file's host code names one
/// width only. `false`: 4 bytes is an assumption.
pub(crate) fn elem_width(k: &Kernel, model: &FileModel) -> (i64, bool) {
    if let Some(w) = closer_width(k, model) {
        return (w, true);
    }
    // The host code of the file (kernels left out: their fp32 is the
    // accumulator's) names one width only: `torch.randn(...)` inputs are fp32.
    let mut host = String::new();
    let mut at = 0;
    for kernel in &model.kernels {
        let (start, end) = (kernel.node.start_byte(), kernel.node.end_byte());
        if start >= at {
            host.push_str(model.src.get(at..start).unwrap_or(""));
            at = end;
        }
    }
    host.push_str(model.src.get(at..).unwrap_or(""));
    let named = width_families(&host);
    let families: Vec<i64> =
        [1, 2, 4].into_iter().enumerate().filter(|(i, _)| named & (1 << i) != 0).map(|(_, w)| w).collect();
    match families.as_slice() {
        [w] => (*w, true),
        _ => (4, false),
    }
}

/// The element widths host code names, as bits: 1 for 1 byte (fp8, int8),
/// 2 for 2 bytes (fp16, bf16), 4 for 4 bytes (fp32, or `torch.randn(...)`
/// inputs). The last resort of [`elem_width`], read over the whole file's host
/// code: a kernel rule that reads it reads every statement's host code.
pub(crate) fn width_families(host: &str) -> u8 {
    let fp32_default = host.contains("torch.randn(") || host.contains("torch.rand(");
    let one = host.contains("float8") || host.contains("int8") || host.contains("fp8");
    let two = host.contains("float16") || host.contains("bfloat16") || host.contains(".half()");
    let four = host.contains("float32") || host.contains(".float()") || fp32_default;
    u8::from(one) | (u8::from(two) << 1) | (u8::from(four) << 2)
}

/// The width the kernel, or every host function that launches it, names.
fn closer_width(k: &Kernel, model: &FileModel) -> Option<i64> {
    match named_width(model.text(k.node)) {
        Some(w) if w < 4 => return Some(w),
        _ => {}
    }
    let widths: Vec<Option<i64>> = model
        .launches_of_kernel(k)
        .map(|l| l.host_fn)
        .map(|f| (f > 0).then_some(()).and_then(|_| named_width(model.text(model.host_fns[f].node))))
        .collect();
    match widths.first() {
        Some(Some(w)) if widths.iter().all(|x| *x == Some(*w)) => Some(*w),
        _ => None,
    }
}

/// Whether what KL006 finds of `k` reads the widths the whole file's host
/// code names ([`width_families`]): it has a `tl.dot` pipeline, and neither
/// it nor its launchers name a width.
pub(crate) fn reads_host_widths(k: &Kernel, model: &FileModel) -> bool {
    dot_dims(k, model).is_some() && closer_width(k, model).is_none()
}

/// One place a configuration is written, with the nodes holding each value.
pub struct Config<'a> {
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
pub type Dims = (String, String, String);

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
}

pub fn configs<'a>(k: &Kernel<'a>, model: &FileModel<'a>, names: &[&str]) -> Vec<Config<'a>> {
    let mut out = Vec::new();
    let defaults: HashMap<String, (i64, Option<Node<'a>>)> = k
        .params
        .iter()
        .filter_map(|p| Some((p.name.to_string(), (parse_int(model.text(p.default?).trim())?, p.default))))
        .collect();
    for d in &k.decorators {
        if d.kind_name() != "call" || !model.text(field!(d, "function").unwrap_or(*d)).ends_with("autotune") {
            continue;
        }
        let (_, kwargs) = call_arguments(*d, model.src);
        let Some((_, list)) = kwargs.iter().find(|(n, _)| n == "configs") else { continue };
        let list = resolve_module_list(model, *list);
        let mut c = list.walk();
        for entry in list.named_children(&mut c).filter(|e| e.kind_name() == "call") {
            let (args, kw) = call_arguments(entry, model.src);
            let mut values = defaults.clone();
            if let Some(dict) = args.first().filter(|d| d.kind_name() == "dictionary") {
                let mut dc = dict.walk();
                for pair in dict.named_children(&mut dc).filter(|p| p.kind_name() == "pair") {
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
    for launch in model.launches_of_kernel(k) {
        let mut values = defaults.clone();
        // `kernel[grid](..., **CONFIG)` with `CONFIG = dict(BLOCK_M=128, ...)` or `{"BLOCK_M": 128, ...}`.
        for (name, val) in splat_entries(model, launch.host_fn, launch.node) {
            if let Some(v) = model.eval_int(launch.host_fn, val, 0) {
                values.insert(name, (v, model.int_literal_node(launch.host_fn, val)));
            }
        }
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

/// The entries of the dictionaries a call unpacks with `**`: a `dict(...)`
/// call or a `{...}` literal, written there or bound to a name in the calling
/// function or at module level. (name, value) in the order written.
fn splat_entries<'a>(model: &FileModel<'a>, f: usize, call: Node<'a>) -> Vec<(String, Node<'a>)> {
    let mut out = Vec::new();
    let Some(args) = field!(call, "arguments") else { return out };
    let mut c = args.walk();
    for splat in args.named_children(&mut c).filter(|a| a.kind_name() == "dictionary_splat") {
        let Some(mut value) = splat.named_child(0) else { continue };
        if value.kind_name() == "identifier" {
            let name = model.text(value);
            let bound = [f, 0].into_iter().find_map(|g| {
                model.host_fns[g].assigns.iter().rfind(|a| a.target == name && !a.augmented).map(|a| a.value)
            });
            match bound {
                Some(v) => value = v,
                None => continue,
            }
        }
        match value.kind_name() {
            "call" if field!(value, "function").is_some_and(|func| model.text(func) == "dict") => {
                out.extend(call_arguments(value, model.src).1);
            }
            "dictionary" => {
                let mut dc = value.walk();
                for pair in value.named_children(&mut dc).filter(|p| p.kind_name() == "pair") {
                    let (Some(key), Some(val)) = (field!(pair, "key"), field!(pair, "value")) else { continue };
                    if key.kind_name() == "string" {
                        out.push((model.text(key).trim_matches(|c| c == '"' || c == '\'').to_string(), val));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn resolve_module_list<'a>(model: &FileModel<'a>, node: Node<'a>) -> Node<'a> {
    if node.kind_name() == "identifier" {
        let name = model.text(node);
        if let Some(a) = model.host_fns[0].assigns.iter().find(|a| a.target == name) {
            return a.value;
        }
    }
    node
}
