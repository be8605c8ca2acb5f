//! The outline of a version: what signature help, completion and hover on a
//! `tl.*` name read, found from the module's top-level statements and its jit
//! functions' own nodes, without building the model (`semantic::Facts`,
//! which also follows launches and calls, is built only for a hover on a
//! kernel or a launch). On a 5,000-line file this is what keeps the first
//! request after an edit within a frame.

use tree_sitter::Node;

use crate::model;
use crate::text::TextRange;

use super::semantic::{Facts, FnParam, JitFn};
use crate::model::Forest;
use crate::model::NodeKind;

/// The outline as `Facts` without launches, launch sites or call sites.
pub(crate) fn build(text: &str, tree: &Forest) -> Facts {
    let top = tree.top_level();
    let (tl_aliases, triton_aliases) = model::imports_of(&top, text);
    let mut jit = Vec::new();
    for stmt in top.into_iter().filter(|s| s.is_named() && s.kind_name() == "decorated_definition") {
        let Some(def) = stmt.child_by_field_name("definition").filter(|d| d.kind_name() == "function_definition")
        else {
            continue;
        };
        let mut dc = stmt.walk();
        let is_jit = stmt
            .named_children(&mut dc)
            .filter(|d| d.kind_name() == "decorator")
            .any(|d| is_jit_decorator(text.get(d.byte_range()).unwrap_or("")));
        if is_jit {
            jit.extend(jit_fn(text, def));
        }
    }
    Facts {
        jit,
        launches: Vec::new(),
        tl_aliases,
        triton_aliases,
        constexpr_globals: super::semantic::constexpr_globals(text, tree),
        top_level: tree.named_top_count(),
    }
}

/// `@triton.jit`, `@jit`, `@triton.jit(...)`, `@gluon.jit`: as the model tells them, without the aliases.
fn is_jit_decorator(d: &str) -> bool {
    let t = d.trim_start_matches('@').trim();
    let t = t.split('(').next().unwrap_or(t).trim();
    match t.strip_suffix(".jit") {
        Some(owner) => matches!(owner.rsplit('.').next().unwrap_or(owner), "triton" | "gluon" | "tl"),
        None => t == "jit" || t == "triton_jit",
    }
}

pub(super) fn jit_fn(text: &str, def: Node) -> Option<JitFn> {
    let src = |n: Node| text.get(n.byte_range()).unwrap_or("").to_string();
    let name = def.child_by_field_name("name")?;
    let mut params = Vec::new();
    if let Some(ps) = def.child_by_field_name("parameters") {
        let mut c = ps.walk();
        for p in ps.named_children(&mut c) {
            let (pname, ty, default) = match p.kind_name() {
                "identifier" => (Some(p), None, None),
                "typed_parameter" => (p.named_child(0), p.child_by_field_name("type"), None),
                "default_parameter" | "typed_default_parameter" => {
                    (p.child_by_field_name("name"), p.child_by_field_name("type"), p.child_by_field_name("value"))
                }
                _ => continue,
            };
            let Some(pname) = pname.filter(|n| n.kind_name() == "identifier") else { continue };
            params.push(FnParam {
                name: src(pname),
                constexpr: ty.is_some_and(|t| src(t).contains("constexpr")),
                default: default.map(src),
            });
        }
    }
    Some(JitFn {
        name: src(name),
        name_range: model::range_of(name),
        range: TextRange::new(def.start_byte(), def.end_byte()),
        body_start: def.child_by_field_name("body").map_or(def.end_byte(), |b| b.start_byte()),
        params,
        launch_sites: Vec::new(),
        call_sites: Vec::new(),
    })
}

/// The names assigned in `def`'s body (assignments and `for` targets), sorted, once each.
pub(crate) fn locals(text: &str, def: Node) -> Vec<String> {
    let mut locals = Vec::new();
    if let Some(body) = def.child_by_field_name("body") {
        model::visit_nodes(body, &mut |n| {
            let target = match n.kind_name() {
                "assignment" | "augmented_assignment" | "for_statement" => n.child_by_field_name("left"),
                _ => None,
            };
            if let Some(t) = target.filter(|t| t.kind_name() == "identifier") {
                locals.push(text.get(t.byte_range()).unwrap_or("").to_string());
            }
        });
    }
    locals.sort();
    locals.dedup();
    locals
}

#[cfg(test)]
mod tests {
    use crate::lsp::semantic::Semantic;
    use std::sync::Arc;

    /// The outline tells the same jit functions, parameters and constexprs as the model; its locals take loop variables too.
    #[test]
    fn the_outline_agrees_with_the_model() {
        let src = "import triton\nimport triton.language as tl\nfrom triton import jit\n\nB = tl.constexpr(4)\n\n@triton.autotune(configs=[], key=['n'])\n@triton.jit\ndef k(x_ptr, n: int, BLOCK: tl.constexpr = 64):\n    offs = tl.arange(0, BLOCK)\n    for i in range(n):\n        acc = offs + i\n\n@jit\ndef helper(a):\n    return a\n\n@torch.jit.script\ndef not_triton(a):\n    return a\n\ndef host(x):\n    k[(1,)](x, 1)\n";
        let full = Semantic::new(1, Arc::from(src), None).facts();
        let semantic = Semantic::new(1, Arc::from(src), None);
        let outline = semantic.outline();
        let view = |f: &crate::lsp::semantic::Facts| {
            f.jit
                .iter()
                .map(|j| {
                    let ps: Vec<_> =
                        j.params.iter().map(|p| (p.name.clone(), p.constexpr, p.default.clone())).collect();
                    (j.name.clone(), j.name_range, ps)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(view(&outline), view(&full));
        assert_eq!(outline.jit.iter().map(|j| j.name.as_str()).collect::<Vec<_>>(), ["k", "helper"]);
        assert_eq!(semantic.locals_of(&outline.jit[0]), ["acc", "i", "offs"]);
        assert_eq!(
            (outline.tl_aliases.clone(), outline.constexpr_globals.clone()),
            (vec!["tl".to_string()], vec!["B".to_string()])
        );
    }
}
