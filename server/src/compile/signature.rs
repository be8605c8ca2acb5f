//! The signatures a kernel is compiled with, read from the file: each launch
//! site (positional, keyword, `**config`), the host expressions passed there
//! (tensor creation calls, `.half()`/`.to(...)`/`dtype=`, shapes and strides,
//! literals, the forward's inputs at the task's precision), the constexpr
//! values written at the launch, every `triton.autotune` configuration (up to
//! a bound, stated) and the keys `triton.heuristics` sets.
//!
//! What cannot be read is assumed (a pointer to fp32, an i32 scalar, a
//! block size of 64) and the assumption is named: a compile error that may
//! come from one is never shown as an error.

use std::collections::{BTreeMap, HashSet};

use serde_json::{json, Value};
use tree_sitter::Node;

use crate::config::{Precision, Settings};
use crate::model::NodeKind;
use crate::model::{call_arguments, field, parse_int, smem, FileModel, Kernel, Launch};
use crate::text::TextRange;

/// One way a kernel is compiled: a launch site crossed with an autotune configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// Where it comes from, for people: "the launch on line 40, config 2 of 4".
    pub label: String,
    pub signature: BTreeMap<String, String>,
    pub constexprs: BTreeMap<String, Value>,
    /// Pointer parameters Triton would see 16-byte aligned (torch allocations are).
    pub divisible: Vec<String>,
    pub num_warps: Option<i64>,
    pub num_stages: Option<i64>,
    /// Each assumption, in words ("`x_ptr`: a pointer to fp32, assumed").
    pub assumed: Vec<String>,
    /// A constexpr value was assumed: what the compiler accepted says nothing of the file's own values.
    pub constexprs_assumed: bool,
    /// The same assumptions, by parameter, so that they can be changed (`other_assumptions`).
    pub guesses: Vec<Guess>,
}

/// One parameter whose type or value was assumed.
#[derive(Debug, Clone, PartialEq)]
pub enum Guess {
    Pointer(String),
    Scalar(String),
    Constexpr(String),
}

impl Variant {
    /// The same variant with the assumptions made otherwise, twice: fp16 pointers and i64
    /// scalars, then i32 pointers and i32 scalars, other constexpr values in both. An error the
    /// compiler gives in all three does not come from them. Unknown scalars stay integers (sizes,
    /// strides, counts: what a kernel takes them for; a float there fails differently anyway).
    pub(crate) fn other_assumptions(&self) -> Vec<Variant> {
        if self.guesses.is_empty() {
            return Vec::new();
        }
        [("*fp16", "i64"), ("*i32", "i32")]
            .iter()
            .map(|(pointer, scalar)| {
                let mut v = self.clone();
                for g in &self.guesses {
                    match g {
                        Guess::Pointer(n) => {
                            v.signature.insert(n.clone(), (*pointer).into());
                        }
                        Guess::Scalar(n) => {
                            v.signature.insert(n.clone(), (*scalar).into());
                        }
                        Guess::Constexpr(n) => {
                            let other = match self.constexprs.get(n).and_then(Value::as_i64) {
                                Some(1) | None => 32,
                                Some(x) => x * 2,
                            };
                            v.constexprs.insert(n.clone(), json!(other));
                        }
                    }
                }
                v
            })
            .collect()
    }
}

/// The variants of one kernel; `omitted` says how many configurations the bound left out.
#[derive(Debug, Clone)]
pub struct KernelPlan {
    pub kernel: String,
    pub name_range: TextRange,
    pub def_range: TextRange,
    /// The `@triton.jit` functions it calls, itself included.
    pub functions: HashSet<String>,
    pub variants: Vec<Variant>,
    pub omitted: usize,
}

/// A host value's type as Triton's launcher would specialize it.
#[derive(Debug, Clone, PartialEq)]
enum Ty {
    Ptr(String),
    Int(Option<i64>),
    Float,
    Bool,
    NoneValue,
}

/// Plans every kernel that is launched, or that nothing launches or calls (a
/// library kernel: compiled with assumed types). Helpers are compiled inside
/// the kernels that call them.
pub(crate) fn plan(model: &FileModel, settings: &Settings, max_configs: usize) -> Vec<KernelPlan> {
    let mut out = Vec::new();
    for k in &model.kernels {
        let launches: Vec<&Launch> = model.launches_of_kernel(k).collect();
        if launches.is_empty() && !model.kernel_calls_to(k).is_empty() {
            continue;
        }
        let mut variants = Vec::new();
        let mut seen = Vec::new();
        let sites: Vec<Option<&Launch>> =
            if launches.is_empty() { vec![None] } else { launches.into_iter().map(Some).collect() };
        let autotune: Vec<smem::Config> =
            smem::configs(k, model, &[]).into_iter().filter(|c| c.from_autotune).collect();
        let heuristics = heuristic_keys(k, model);
        let mut total = 0;
        for site in sites {
            let base = from_launch(model, settings, k, site, &heuristics);
            let configs: Vec<Option<(usize, &smem::Config)>> =
                if autotune.is_empty() { vec![None] } else { autotune.iter().enumerate().map(Some).collect() };
            for config in configs {
                let mut v = base.clone();
                if let Some((i, c)) = config {
                    apply_config(&mut v, k, c);
                    v.label = format!("{}, autotune config {} of {}", v.label, i + 1, autotune.len());
                }
                let key = (v.signature.clone(), v.constexprs.clone(), v.num_warps, v.num_stages);
                if seen.contains(&key) {
                    continue;
                }
                seen.push(key);
                total += 1;
                if variants.len() < max_configs {
                    variants.push(v);
                }
            }
        }
        let def_range = TextRange::new(k.node.start_byte(), k.node.end_byte());
        out.push(KernelPlan {
            kernel: k.name.clone(),
            name_range: k.name_range,
            def_range,
            functions: reachable(model, k),
            omitted: total - variants.len(),
            variants,
        });
    }
    out
}

/// `k` and the `@triton.jit` functions it calls, transitively, by name.
fn reachable(model: &FileModel, k: &Kernel) -> HashSet<String> {
    let mut seen = HashSet::from([k.name.clone()]);
    let mut stack = vec![k];
    while let Some(k) = stack.pop() {
        for call in k.calls.iter().filter(|c| c.tl_name.is_none()) {
            if let Some(callee) = model.kernel(&call.callee) {
                if seen.insert(callee.name.clone()) {
                    stack.push(callee);
                }
            }
        }
        // A jit function named without a call: `tl.reduce(x, 0, combine_fn=add)`.
        let body = model.text(k.node);
        for other in &model.kernels {
            let named = body.match_indices(other.name.as_str()).any(|(i, _)| {
                let before =
                    body[..i].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '.'));
                let after =
                    body[i + other.name.len()..].chars().next().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
                before && after
            });
            if named && seen.insert(other.name.clone()) {
                stack.push(other);
            }
        }
    }
    seen
}

/// The keys of `@triton.heuristics({...})`: constexprs the launch does not pass.
fn heuristic_keys(k: &Kernel, model: &FileModel) -> Vec<String> {
    let mut keys = Vec::new();
    for d in &k.decorators {
        let is_heuristics = d.kind_name() == "call"
            && field!(d, "function").is_some_and(|f| model.text(f).rsplit('.').next() == Some("heuristics"));
        if !is_heuristics {
            continue;
        }
        let (args, kwargs) = call_arguments(*d, model.src);
        let dict = args.first().copied().or_else(|| kwargs.iter().find(|(n, _)| n == "values").map(|(_, v)| *v));
        let Some(dict) = dict.filter(|d| d.kind_name() == "dictionary") else { continue };
        let mut c = dict.walk();
        for pair in dict.named_children(&mut c).filter(|p| p.kind_name() == "pair") {
            if let Some(key) = field!(pair, "key").filter(|k| k.kind_name() == "string") {
                keys.push(model.text(key).trim_matches(|c| c == '"' || c == '\'').to_string());
            }
        }
    }
    keys
}

fn apply_config(v: &mut Variant, k: &Kernel, c: &smem::Config) {
    for (name, (value, _)) in &c.values {
        match name.as_str() {
            "num_warps" => v.num_warps = Some(*value),
            "num_stages" => v.num_stages = Some(*value),
            _ if k.is_constexpr(name) => {
                v.constexprs.insert(name.clone(), json!(value));
                let prefix = format!("`{name}`:");
                v.assumed.retain(|a| !a.starts_with(&prefix));
                v.constexprs_assumed = v.assumed.iter().any(|a| a.contains(", assumed "));
            }
            _ => {}
        }
    }
}

fn line_of(model: &FileModel, offset: usize) -> usize {
    model.src[..offset.min(model.src.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

fn from_launch<'a>(
    model: &FileModel<'a>,
    settings: &Settings,
    k: &Kernel<'a>,
    site: Option<&Launch<'a>>,
    heuristics: &[String],
) -> Variant {
    let label = match site {
        Some(l) => format!("the launch on line {}", line_of(model, l.node.start_byte())),
        None => "no launch in this file".to_string(),
    };
    let mut v = Variant {
        label,
        signature: BTreeMap::new(),
        constexprs: BTreeMap::new(),
        divisible: Vec::new(),
        num_warps: None,
        num_stages: None,
        assumed: Vec::new(),
        constexprs_assumed: false,
        guesses: Vec::new(),
    };
    let splat: Vec<(String, Node)> = site.map(|l| splat_entries(model, l)).unwrap_or_default();
    if let Some(l) = site {
        for (name, node) in l.kwargs.iter().cloned().chain(splat.iter().cloned()) {
            match name.as_str() {
                "num_warps" => v.num_warps = model.eval_int(l.host_fn, node, 0),
                "num_stages" => v.num_stages = model.eval_int(l.host_fn, node, 0),
                _ => {}
            }
        }
    }
    let unspecialized = jit_list(k, model, "do_not_specialize");
    let unaligned = jit_list(k, model, "do_not_specialize_on_alignment");
    for (i, p) in k.params.iter().enumerate() {
        let specialize = !unspecialized.iter().any(|u| *u == p.name || *u == i.to_string());
        let align = specialize && !unaligned.iter().any(|u| *u == p.name || *u == i.to_string());
        let passed = site.and_then(|l| {
            l.value_for(&p.name, i).or_else(|| splat.iter().find(|(n, _)| *n == p.name).map(|(_, n)| *n))
        });
        let f = site.map_or(0, |l| l.host_fn);
        if p.constexpr {
            let value = passed.and_then(|n| constexpr_value(model, f, n));
            let value = value.or_else(|| p.default.and_then(|d| constexpr_value(model, 0, d)));
            match value {
                Some(val) => {
                    v.constexprs.insert(p.name.to_string(), val);
                }
                None => {
                    // `triton.next_power_of_2(H)`: a power of two, and a block dimension (tl.dot wants 16+).
                    let pow2 = passed.is_some_and(|n| {
                        let name = model.text(n).trim();
                        let assigned = model.host_fns[f].assigns.iter().rfind(|a| a.target == name);
                        model.text(n).contains("next_power_of_2")
                            || assigned.is_some_and(|a| model.text(a.value).contains("next_power_of_2"))
                    });
                    let guess = if pow2 { 64 } else { assumed_constexpr(&p.name) };
                    let why =
                        if heuristics.iter().any(|h| h == p.name) { "set by `triton.heuristics`" } else { "not known" };
                    v.assumed.push(format!("`{}`: {why}, assumed {guess}", p.name));
                    v.guesses.push(Guess::Constexpr(p.name.to_string()));
                    v.constexprs_assumed = true;
                    v.constexprs.insert(p.name.to_string(), json!(guess));
                }
            }
            continue;
        }
        if passed.is_none() {
            if let Some(val) = p.default.and_then(|d| constexpr_value(model, 0, d)) {
                // An unpassed parameter takes its default, which Triton specializes as a constant.
                v.constexprs.insert(p.name.to_string(), val);
                continue;
            }
        }
        let ty = passed.and_then(|n| classify(model, settings, f, n, 0));
        match ty {
            Some(Ty::Ptr(dtype)) => {
                v.signature.insert(p.name.to_string(), format!("*{dtype}"));
                if align {
                    v.divisible.push(p.name.to_string());
                }
            }
            Some(Ty::Int(Some(1))) if specialize => {
                // Triton's launcher turns an integer equal to 1 into a constant.
                v.constexprs.insert(p.name.to_string(), json!(1));
            }
            Some(Ty::Int(value)) => {
                v.signature.insert(
                    p.name.to_string(),
                    if value.is_some_and(|x| x.abs() >= 1 << 31) { "i64" } else { "i32" }.into(),
                );
                if align && value.is_some_and(|x| x % 16 == 0) {
                    v.divisible.push(p.name.to_string());
                }
            }
            Some(Ty::Float) => {
                v.signature.insert(p.name.to_string(), "fp32".into());
            }
            Some(Ty::Bool) => {
                v.signature.insert(p.name.to_string(), "i1".into());
            }
            Some(Ty::NoneValue) => {
                v.constexprs.insert(p.name.to_string(), Value::Null);
            }
            None if used_as_pointer(model, k, &p.name) => {
                v.signature.insert(p.name.to_string(), "*fp32".into());
                v.divisible.push(p.name.to_string());
                v.assumed.push(format!("`{}`: a pointer to fp32, assumed", p.name));
                v.guesses.push(Guess::Pointer(p.name.to_string()));
            }
            None => {
                v.signature.insert(p.name.to_string(), "i32".into());
                v.assumed.push(format!("`{}`: an i32 scalar, assumed", p.name));
                v.guesses.push(Guess::Scalar(p.name.to_string()));
            }
        }
    }
    v
}

/// The entries of `@triton.jit(NAME=[...])` (parameter names, or indices as text).
fn jit_list(k: &Kernel, model: &FileModel, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for d in k.decorators.iter().filter(|d| d.kind_name() == "call") {
        if !field!(d, "function").is_some_and(|f| model.text(f).rsplit('.').next() == Some("jit")) {
            continue;
        }
        let (_, kwargs) = call_arguments(*d, model.src);
        let Some((_, list)) = kwargs.iter().find(|(n, _)| n == name) else { continue };
        let mut c = list.walk();
        for item in list.named_children(&mut c) {
            out.push(model.text(item).trim_matches(|c| c == '"' || c == '\'').to_string());
        }
    }
    out
}

/// A block size is 64; a flag or other constant 1 (which `if FLAG:` reads as true).
fn assumed_constexpr(name: &str) -> i64 {
    let upper = name.to_ascii_uppercase();
    if ["BLOCK", "TILE", "SIZE", "BM", "BN", "BK"].iter().any(|w| upper.contains(w)) {
        64
    } else {
        1
    }
}

/// Whether the kernel loads or stores through `name`: it is the base of the
/// address of a `tl.load`/`tl.store`/atomic (`x_ptr + offs`, directly or
/// through a name assigned in the kernel), the one term of that sum that is a
/// pointer (named `*ptr*`, else the leftmost parameter), or named `*_ptr`.
fn used_as_pointer<'a>(model: &FileModel<'a>, k: &Kernel<'a>, name: &str) -> bool {
    if name.to_ascii_lowercase().ends_with("ptr") {
        return true;
    }
    let address = |call: &crate::model::KCall<'a>| -> Option<Node<'a>> {
        match call.tl_name.as_deref() {
            Some("load" | "store" | "atomic_add" | "atomic_max" | "atomic_min" | "atomic_cas" | "atomic_xchg") => {
                call.arg(0, "pointer")
            }
            Some("make_block_ptr" | "make_tensor_descriptor") => call.arg(0, "base"),
            _ => None,
        }
    };
    k.calls.iter().filter_map(address).any(|a| {
        let mut terms = Vec::new();
        base_terms(model, k, a, &mut terms, 0);
        let params: Vec<&String> = terms.iter().filter(|t| k.param(t).is_some()).collect();
        let pointer = params.iter().find(|t| t.to_ascii_lowercase().contains("ptr")).or_else(|| params.first());
        pointer.is_some_and(|p| p.as_str() == name)
    })
}

/// The identifiers summed (`+`, `-`) at the top of an address, following
/// names the kernel assigns once; products and calls are offsets, not bases.
fn base_terms(model: &FileModel, k: &Kernel, node: Node, out: &mut Vec<String>, depth: usize) {
    if depth > 6 {
        return;
    }
    match node.kind_name() {
        "parenthesized_expression" => {
            if let Some(inner) = node.named_child(0) {
                base_terms(model, k, inner, out, depth + 1);
            }
        }
        "binary_operator" => {
            let op = field!(node, "operator").map(|o| model.text(o)).unwrap_or("");
            if op == "+" || op == "-" {
                for side in [field!(node, "left"), field!(node, "right")].into_iter().flatten() {
                    base_terms(model, k, side, out, depth + 1);
                }
            }
        }
        "identifier" => {
            let name = model.text(node).to_string();
            let assigned: Vec<_> = k.assigns.iter().filter(|a| a.target == name).collect();
            match assigned.as_slice() {
                [a] if !a.augmented => base_terms(model, k, a.value, out, depth + 1),
                _ => out.push(name),
            }
        }
        _ => {}
    }
}

/// A constexpr written at the launch: an integer (through constants), a bool,
/// a float, a string, `None`, or a `tl.<dtype>`.
fn constexpr_value(model: &FileModel, f: usize, node: Node) -> Option<Value> {
    if let Some(i) = model.eval_int(f, node, 0) {
        return Some(json!(i));
    }
    let text = model.text(node).trim();
    match node.kind_name() {
        "true" => Some(json!(true)),
        "false" => Some(json!(false)),
        "none" => Some(Value::Null),
        "float" => text.parse::<f64>().ok().map(|x| json!(x)),
        "string" if !text.starts_with('f') => {
            Some(json!(text.trim_start_matches(['r', 'b']).trim_matches(|c| c == '"' || c == '\'')))
        }
        "unary_operator" if text.starts_with('-') => text[1..].trim().parse::<f64>().ok().map(|x| json!(-x)),
        "attribute" => {
            let (module, name) = text.rsplit_once('.')?;
            (model.is_tl_alias(module) || module.ends_with("language")).then(|| json!({ "tl": name }))
        }
        _ => None,
    }
}

/// The entries of a `**config` at the launch (a `dict(...)` or `{...}` bound in the launcher or the module).
fn splat_entries<'a>(model: &FileModel<'a>, l: &Launch<'a>) -> Vec<(String, Node<'a>)> {
    let mut out = Vec::new();
    let Some(args) = field!(l.node, "arguments") else { return out };
    let mut c = args.walk();
    for splat in args.named_children(&mut c).filter(|a| a.kind_name() == "dictionary_splat") {
        let Some(mut value) = splat.named_child(0) else { continue };
        if value.kind_name() == "identifier" {
            let name = model.text(value);
            let bound = [l.host_fn, 0].into_iter().find_map(|g| {
                model.host_fns[g].assigns.iter().rfind(|a| a.target == name && !a.augmented).map(|a| a.value)
            });
            match bound {
                Some(v) => value = v,
                None => continue,
            }
        }
        if value.kind_name() == "call" && field!(value, "function").is_some_and(|f| model.text(f) == "dict") {
            out.extend(call_arguments(value, model.src).1);
        } else if value.kind_name() == "dictionary" {
            let mut dc = value.walk();
            for pair in value.named_children(&mut dc).filter(|p| p.kind_name() == "pair") {
                if let (Some(key), Some(val)) = (field!(pair, "key"), field!(pair, "value")) {
                    if key.kind_name() == "string" {
                        out.push((model.text(key).trim_matches(|c| c == '"' || c == '\'').to_string(), val));
                    }
                }
            }
        }
    }
    out
}

/// `torch.float16` -> `fp16`, Triton's signature name for a torch dtype.
fn dtype_of(text: &str) -> Option<&'static str> {
    let name = text.trim().rsplit('.').next()?.trim_matches(|c| c == '"' || c == '\'');
    Some(match name {
        "float16" | "half" => "fp16",
        "bfloat16" => "bf16",
        "float32" | "float" => "fp32",
        "float64" | "double" => "fp64",
        "int8" => "i8",
        "uint8" => "u8",
        "int16" | "short" => "i16",
        "int32" | "int" => "i32",
        "int64" | "long" => "i64",
        "bool" => "i1",
        "float8_e4m3fn" => "fp8e4nv",
        "float8_e5m2" => "fp8e5",
        _ => return None,
    })
}

fn precision_dtype(settings: &Settings, model: &FileModel) -> String {
    // The task's own inputs say their dtype where `get_inputs` writes one.
    if let Some(f) = model.host_fns.iter().find(|f| f.name == "get_inputs") {
        let t = model.text(f.node);
        for (needle, dtype) in [("bfloat16", "bf16"), ("float16", "fp16"), (".half()", "fp16")] {
            if t.contains(needle) {
                return dtype.into();
            }
        }
    }
    match settings.bench.precision {
        Precision::Fp32 => "fp32",
        Precision::Fp16 => "fp16",
        Precision::Bf16 => "bf16",
    }
    .into()
}

/// Methods that return a tensor of the receiver's dtype.
const SAME_DTYPE: &[&str] = &[
    "contiguous",
    "view",
    "reshape",
    "t",
    "transpose",
    "permute",
    "flatten",
    "expand",
    "clone",
    "detach",
    "squeeze",
    "unsqueeze",
    "cuda",
    "narrow",
    "view_as",
    "expand_as",
    "as_strided",
    "flip",
    "repeat",
    "cpu",
    "mT",
];

/// What a host expression passed to a kernel is, where the file says so.
fn classify(model: &FileModel, settings: &Settings, f: usize, node: Node, depth: usize) -> Option<Ty> {
    if depth > 8 {
        return None;
    }
    let text = model.text(node).trim();
    let again = |n: Node| classify(model, settings, f, n, depth + 1);
    match node.kind_name() {
        "integer" => Some(Ty::Int(parse_int(text))),
        "float" => Some(Ty::Float),
        "true" | "false" => Some(Ty::Bool),
        "none" => Some(Ty::NoneValue),
        "parenthesized_expression" => again(node.named_child(0)?),
        "unary_operator" => match again(node.named_child(0)?)? {
            Ty::Int(v) => Some(Ty::Int(v.map(|x| -x))),
            other => Some(other),
        },
        "binary_operator" => {
            let (l, r) = (again(field!(node, "left")?), again(field!(node, "right")?));
            let op = field!(node, "operator").map(|o| model.text(o)).unwrap_or("");
            match (l, r) {
                (Some(Ty::Float), _) | (_, Some(Ty::Float)) => Some(Ty::Float),
                (Some(Ty::Int(_)), Some(Ty::Int(_))) if op == "/" => Some(Ty::Float),
                (Some(Ty::Int(_)), Some(Ty::Int(_))) => Some(Ty::Int(model.eval_int(f, node, 0))),
                _ => None,
            }
        }
        "subscript" => {
            let value = field!(node, "value")?;
            let vt = model.text(value);
            if vt.ends_with(".shape") || vt.ends_with(".stride()") || vt.ends_with(".size()") {
                return Some(Ty::Int(None));
            }
            match again(value)? {
                Ty::Ptr(d) => Some(Ty::Ptr(d)),
                _ => None,
            }
        }
        "identifier" => {
            for scope in [f, 0] {
                let h = &model.host_fns[scope];
                // The last assignment finished before this use: in `x = x.contiguous()` the `x`
                // on the right is the one from before (a parameter, an earlier assignment).
                let before = |a: &&crate::model::Assign| scope != f || a.node.end_byte() <= node.start_byte();
                if let Some(a) = h.assigns.iter().filter(before).rfind(|a| a.target == text && !a.augmented) {
                    let value = a.value;
                    // `B, N = x.shape` gives each name the whole value.
                    if model.text(value).trim_end().ends_with(".shape") || model.text(value).ends_with(".size()") {
                        return Some(Ty::Int(None));
                    }
                    return classify(model, settings, scope, value, depth + 1);
                }
                if scope != 0 && h.params.iter().any(|p| p == text) {
                    return parameter(model, settings, scope, text, depth);
                }
            }
            None
        }
        "attribute" => {
            // `self.weight` of the candidate's model: a parameter, cast to the task's precision by the
            // harness; `self.scale = scale` in `__init__` is whatever the task passed: not known.
            let object = field!(node, "object").map(|o| model.text(o));
            let class = model.host_fns[f].class.as_deref().filter(|c| *c == "ModelNew" || *c == "Model");
            if object != Some("self") {
                return None;
            }
            let init = model.host_fns.iter().position(|h| h.name == "__init__" && h.class.as_deref() == class)?;
            let a = model.host_fns[init].assigns.iter().rfind(|a| a.target == text && !a.augmented)?;
            let value = model.text(a.value).trim_start();
            let tensor = ["nn.Parameter(", "torch.nn.Parameter(", "torch.", "nn."].iter().any(|p| value.starts_with(p));
            if tensor {
                Some(Ty::Ptr(precision_dtype(settings, model)))
            } else {
                classify(model, settings, init, a.value, depth + 1).filter(|t| !matches!(t, Ty::Ptr(_)))
            }
        }
        "call" => call_type(model, settings, f, node, depth),
        _ => None,
    }
}

/// A parameter of host function `f`: the forward's inputs are the task's
/// tensors; a helper's is what its callers in this file pass.
fn parameter(model: &FileModel, settings: &Settings, f: usize, name: &str, depth: usize) -> Option<Ty> {
    let h = &model.host_fns[f];
    match annotation(model, h.node, name).as_deref() {
        Some("float") => return Some(Ty::Float),
        Some("int") => return Some(Ty::Int(None)),
        Some("bool") => return Some(Ty::Bool),
        _ => {}
    }
    if h.name == "forward" && h.class.is_some() {
        return Some(Ty::Ptr(precision_dtype(settings, model)));
    }
    let index = h.params.iter().position(|p| p == name)?;
    for (g, caller) in model.host_fns.iter().enumerate() {
        for call in caller.calls.iter().filter(|c| c.callee == h.name) {
            let (args, kwargs) = call_arguments(call.node, model.src);
            let method = h.params.first().is_some_and(|p| p == "self")
                && field!(call.node, "function").is_some_and(|func| func.kind_name() == "attribute");
            let at = if method { index.checked_sub(1) } else { Some(index) };
            let passed = kwargs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| *v)
                .or_else(|| at.and_then(|i| args.get(i).copied()));
            if let Some(ty) = passed.and_then(|n| classify(model, settings, g, n, depth + 1)) {
                return Some(ty);
            }
        }
    }
    None
}

/// The annotation of parameter `name` of the function defined at `def`: `s: float` says what it is.
fn annotation(model: &FileModel, def: Node, name: &str) -> Option<String> {
    let params = field!(def, "parameters")?;
    let mut cursor = params.walk();
    let found = params.named_children(&mut cursor).find(|p| {
        matches!(p.kind_name(), "typed_parameter" | "typed_default_parameter")
            && (field!(*p, "name").or_else(|| p.named_child(0))).is_some_and(|n| model.text(n) == name)
    })?;
    field!(found, "type").map(|t| model.text(t).trim().to_string())
}

fn call_type(model: &FileModel, settings: &Settings, f: usize, node: Node, depth: usize) -> Option<Ty> {
    let func = field!(node, "function")?;
    let (args, kwargs) = call_arguments(node, model.src);
    let kw = |name: &str| kwargs.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    let again = |n: Node| classify(model, settings, f, n, depth + 1);
    let explicit = kw("dtype").and_then(|d| dtype_of(model.text(d))).map(|d| Ty::Ptr(d.to_string()));
    if func.kind_name() == "attribute" {
        let method = model.text(field!(func, "attribute")?);
        let object = field!(func, "object")?;
        let module = model.text(object);
        if module == "torch" {
            return match method {
                "empty" | "zeros" | "ones" | "randn" | "rand" | "empty_strided" => {
                    explicit.or(Some(Ty::Ptr("fp32".into())))
                }
                // The dtype follows the data: `torch.tensor(addresses)` is int64, `full(.., 0)` too.
                "tensor" | "full" => explicit.or_else(|| {
                    let data = if method == "full" { args.get(1) } else { args.first() };
                    match data.map(|d| d.kind_name()) {
                        Some("float") => Some(Ty::Ptr("fp32".into())),
                        Some("integer") => Some(Ty::Ptr("i64".into())),
                        _ => None,
                    }
                }),
                "arange" | "randint" => explicit.or(Some(Ty::Ptr("i64".into()))),
                m if m.ends_with("_like") => explicit.or_else(|| args.first().and_then(|a| again(*a))),
                _ => args.first().and_then(|a| again(*a)).filter(|t| matches!(t, Ty::Ptr(_))),
            };
        }
        if module == "triton" && method == "cdiv" || module == "math" {
            return Some(Ty::Int(model.eval_int(f, node, 0)));
        }
        return match method {
            "size" | "stride" | "numel" | "dim" | "element_size" | "nelement" => Some(Ty::Int(None)),
            "half" => Some(Ty::Ptr("fp16".into())),
            "float" => Some(Ty::Ptr("fp32".into())),
            "bfloat16" => Some(Ty::Ptr("bf16".into())),
            "double" => Some(Ty::Ptr("fp64".into())),
            "int" => Some(Ty::Ptr("i32".into())),
            "long" => Some(Ty::Ptr("i64".into())),
            "to" => {
                let target = kw("dtype").or_else(|| args.iter().copied().find(|a| dtype_of(model.text(*a)).is_some()));
                match target.and_then(|t| dtype_of(model.text(t))) {
                    Some(d) => Some(Ty::Ptr(d.into())),
                    None => again(object),
                }
            }
            "new_empty" | "new_zeros" | "new_ones" | "new_full" => explicit.or_else(|| again(object)),
            m if SAME_DTYPE.contains(&m) => again(object).filter(|t| matches!(t, Ty::Ptr(_))),
            _ => None,
        };
    }
    match model.text(func) {
        "int" | "len" => Some(Ty::Int(model.eval_int(f, node, 0))),
        "float" => Some(Ty::Float),
        "max" | "min" => {
            let types: Vec<Option<Ty>> = args.iter().map(|a| again(*a)).collect();
            if types.iter().all(|t| matches!(t, Some(Ty::Int(_)))) {
                Some(Ty::Int(None))
            } else {
                None
            }
        }
        _ => None,
    }
}

#[cfg(test)]
#[path = "signature_tests.rs"]
mod tests;
