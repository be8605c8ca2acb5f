//! Data flow inside a kernel: the names an expression reads and what it
//! depends on through the kernel's assignments (grid axes followed as the
//! pseudo names `@pid<axis>` and `@nprog<axis>`), and the buffer a pointer
//! expression addresses.

use std::collections::HashSet;

use tree_sitter::Node;

use super::nodes::{for_each_child, MAX_DEPTH};
use super::{Assign, Kernel};
use crate::model::NodeKind;

/// Identifiers an expression reads. `tl.program_id(a)` reads the pseudo
/// identifier `@pid<a>` and `tl.num_programs(a)` reads `@nprog<a>`, so that
/// data flow from grid axes can be followed like any variable. Attribute
/// names and keyword names are not reads.
pub(crate) fn collect_identifiers(node: Node, src: &str, out: &mut Vec<String>) {
    let mut cursor = node.walk();
    let mut stack = vec![(node, 0usize)];
    while let Some((n, depth)) = stack.pop() {
        if depth > MAX_DEPTH * 4 {
            continue;
        }
        match n.kind_name() {
            "identifier" => out.push(src[n.byte_range()].to_string()),
            "call" => {
                let func = field!(n, "function");
                let ftext = func.map(|f| &src[f.byte_range()]).unwrap_or("");
                if ftext.ends_with(".program_id") || ftext.ends_with(".num_programs") {
                    let axis = field!(n, "arguments")
                        .and_then(|a| a.named_child(0))
                        .map(|a| src[a.byte_range()].trim_start_matches("axis=").trim().to_string())
                        .unwrap_or_else(|| "0".to_string());
                    let kind = if ftext.ends_with(".program_id") { "@pid" } else { "@nprog" };
                    out.push(format!("{kind}{axis}"));
                    continue;
                }
                if let Some(args) = field!(n, "arguments") {
                    stack.push((args, depth + 1));
                }
                if let Some(f) = func {
                    if f.kind_name() == "attribute" {
                        if let Some(obj) = field!(f, "object") {
                            stack.push((obj, depth + 1));
                        }
                    } else {
                        stack.push((f, depth + 1));
                    }
                }
            }
            "attribute" => {
                if let Some(obj) = field!(n, "object") {
                    stack.push((obj, depth + 1));
                }
            }
            "keyword_argument" => {
                if let Some(v) = field!(n, "value") {
                    stack.push((v, depth + 1));
                }
            }
            _ => for_each_child(&mut cursor, n, true, |child| stack.push((child, depth + 1))),
        }
    }
}

impl<'a> Kernel<'a> {
    /// Every identifier `expr` depends on through assignments inside the
    /// kernel (flow-insensitive), including itself and pseudo identifiers for grid axes.
    pub(crate) fn deps(&self, expr: Node, src: &str) -> HashSet<String> {
        let mut ids = Vec::new();
        collect_identifiers(expr, src, &mut ids);
        self.closure(ids, src)
    }

    pub(crate) fn var_deps(&self, var: &str, src: &str) -> HashSet<String> {
        self.closure(vec![var.to_string()], src)
    }

    fn closure(&self, work: Vec<String>, src: &str) -> HashSet<String> {
        self.closure_before(work, src, usize::MAX)
    }

    /// Like `deps`, but follows only assignments written before byte `before`:
    /// what a value at that point can depend on in the same iteration and
    /// before, not what the loop computes from it afterwards.
    pub(crate) fn deps_before(&self, expr: Node, src: &str, before: usize) -> HashSet<String> {
        let mut ids = Vec::new();
        collect_identifiers(expr, src, &mut ids);
        self.closure_before(ids, src, before)
    }

    fn closure_before(&self, mut work: Vec<String>, src: &str, before: usize) -> HashSet<String> {
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(id) = work.pop() {
            if !seen.insert(id.clone()) {
                continue;
            }
            for a in self.assigns.iter().filter(|a| a.target == id && a.node.end_byte() <= before) {
                collect_identifiers(a.value, src, &mut work);
            }
        }
        seen
    }

    /// Grid axes (`tl.program_id(axis)`) an expression depends on.
    pub(crate) fn pid_axes(&self, expr: Node, src: &str) -> HashSet<String> {
        self.deps(expr, src).into_iter().filter_map(|d| d.strip_prefix("@pid").map(str::to_string)).collect()
    }

    /// The leftmost name of a pointer expression after following local
    /// aliases: the buffer a `tl.load`/`tl.store` addresses.
    pub(crate) fn pointer_base(&self, ptr: Node, src: &str) -> Option<String> {
        let mut node = ptr;
        for _ in 0..16 {
            match node.kind_name() {
                "binary_operator" => node = field!(node, "left")?,
                "parenthesized_expression" => node = node.named_child(0)?,
                "subscript" => node = field!(node, "value")?,
                "identifier" => {
                    let name = &src[node.byte_range()];
                    if self.param(name).is_some() {
                        return Some(name.to_string());
                    }
                    let assigns: Vec<&Assign> =
                        self.assigns.iter().filter(|a| a.target == name && !a.augmented).collect();
                    match assigns.first() {
                        Some(a) => node = a.value,
                        None => return Some(name.to_string()),
                    }
                }
                _ => return None,
            }
        }
        None
    }
}
