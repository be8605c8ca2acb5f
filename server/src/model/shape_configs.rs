//! The constexpr values a kernel is compiled with, as far as its file tells:
//! what the block-shape interpretation (`shapes.rs`) runs under.

use std::collections::{HashMap, HashSet};

use super::nodes::parse_int;
use super::{FileModel, Kernel};
use crate::model::NodeKind;
use crate::text::TextRange;

/// One set of constexpr values a kernel is compiled with, and where it is written.
pub struct ConstexprConfig {
    /// "this launch of `k`", "this `triton.Config`", "the parameters' defaults".
    pub label: String,
    pub at: Option<TextRange>,
    pub values: HashMap<String, i64>,
}

/// Most configurations a kernel's shapes are checked under.
const MAX_CONFIGS: usize = 32;

/// The constexpr values `k` is compiled with, as far as this file tells:
/// each autotune configuration (with what each launch passes beside it),
/// else each launch (by keyword or position; a value that is not a known
/// integer is unknown, never the default), else the defaults. Names a
/// `@triton.heuristics` decorator sets are unknown. A helper called from
/// other kernels gets what its callers pass, so nothing is known of it.
pub(crate) fn constexpr_configs<'a>(k: &Kernel<'a>, model: &FileModel<'a>) -> Vec<ConstexprConfig> {
    let constexprs: Vec<(usize, &str)> =
        k.params.iter().enumerate().filter(|(_, p)| p.constexpr).map(|(i, p)| (i, p.name)).collect();
    let heuristic: HashSet<String> = k
        .decorators
        .iter()
        .filter(|d| model.text(**d).contains("heuristics"))
        .flat_map(|d| {
            let mut keys = Vec::new();
            super::visit_nodes(*d, &mut |n| {
                if n.kind_name() == "pair" {
                    if let Some(key) = field!(n, "key") {
                        keys.push(model.text(key).trim_matches(|c| c == '"' || c == '\'').to_string());
                    }
                }
            });
            keys
        })
        .collect();
    let defaults: HashMap<String, i64> = k
        .params
        .iter()
        .filter(|p| p.constexpr && !heuristic.contains(p.name))
        .filter_map(|p| Some((p.name.to_string(), parse_int(model.text(p.default?).trim())?)))
        .collect();
    let launched: Vec<ConstexprConfig> = model
        .launches_of_kernel(k)
        .map(|l| {
            let splat = l.args.iter().any(|a| a.kind_name() == "list_splat")
                || super::nodes::any_node(l.node, |n| n.kind_name() == "dictionary_splat");
            let mut values = if splat { HashMap::new() } else { defaults.clone() };
            for &(i, name) in &constexprs {
                let given = if splat { l.kwarg(name) } else { l.value_for(name, i) };
                if let Some(node) = given {
                    match model.eval_int(l.host_fn, node, 0) {
                        Some(v) => values.insert(name.to_string(), v),
                        None => values.remove(name),
                    };
                }
            }
            ConstexprConfig { label: format!("this launch of `{}`", k.name), at: Some(l.name_range), values }
        })
        .collect();
    let tuned: Vec<ConstexprConfig> = super::smem::configs(k, model, &[])
        .into_iter()
        .filter(|c| c.from_autotune)
        .map(|c| ConstexprConfig {
            label: c.label,
            at: Some(c.at),
            values: c.values.into_iter().map(|(name, (v, _))| (name, v)).collect(),
        })
        .collect();
    let mut out: Vec<ConstexprConfig> = match (tuned.is_empty(), launched.is_empty()) {
        (true, true) if model.kernel_calls_to(k).is_empty() => {
            vec![ConstexprConfig { label: "the parameters' defaults".into(), at: None, values: defaults }]
        }
        (true, true) => Vec::new(),
        (true, false) => launched,
        (false, true) => tuned,
        (false, false) => tuned
            .iter()
            .flat_map(|t| {
                launched.iter().map(move |l| {
                    let mut values = l.values.clone();
                    values.extend(t.values.iter().map(|(n, v)| (n.clone(), *v)));
                    ConstexprConfig { label: t.label.clone(), at: t.at, values }
                })
            })
            .collect(),
    };
    for c in &mut out {
        c.values.retain(|name, _| !heuristic.contains(name) && k.is_constexpr(name));
    }
    let mut seen = Vec::new();
    out.retain(|c| {
        let mut key: Vec<(&String, &i64)> = c.values.iter().collect();
        key.sort();
        let key: Vec<(String, i64)> = key.into_iter().map(|(n, v)| (n.clone(), *v)).collect();
        if seen.contains(&key) {
            return false;
        }
        seen.push(key);
        true
    });
    out.truncate(MAX_CONFIGS);
    out
}
