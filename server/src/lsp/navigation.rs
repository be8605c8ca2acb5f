//! Navigation over the model of one file: what a name at a position stands
//! for (a kernel, a jit helper, a host function or class, a kernel's
//! parameter, a module constant), where it is defined, where it is used, the
//! file's symbols, and the calls between kernels, helpers and the host
//! functions that launch them. Everything here works on byte ranges of one
//! text; the handlers under `server/` convert to LSP positions.
//!
//! A document's tree is read through [`Source`], the one way navigation gets
//! at a document's syntax: the tree the document keeps, else a fresh parse.

use std::sync::Arc;

use tree_sitter::Node;

use crate::model::Forest;
use crate::model::NodeKind;
use crate::model::{self, range_of, FileModel, Kernel};
use crate::text::{LineIndex, TextRange};

/// A document's text, line index and (when it keeps one) tree, taken under
/// the state lock ([`super::document::Document::syntax`]).
pub struct Source {
    pub text: Arc<str>,
    pub line_index: Arc<LineIndex>,
    pub tree: Option<Forest>,
}

impl Source {
    /// The document's tree: the one it keeps, else the text parsed now (a few ms).
    pub fn tree(&self) -> Forest {
        match &self.tree {
            Some(t) => t.clone(),
            None => model::parse_forest(&self.text),
        }
    }
}

/// What a name stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A `@triton.jit` function (index in `FileModel::kernels`).
    Kernel(usize),
    /// A host function or method (index in `FileModel::host_fns`, never 0).
    HostFn(usize),
    Class(usize),
    /// A parameter of a kernel.
    Param {
        kernel: usize,
        name: String,
    },
    /// A module-level name assigned once at least: its first assignment's target.
    ModuleConst {
        name: String,
        at: TextRange,
    },
}

/// The identifier at `offset` (or just before it, the cursor at a word's end).
pub(crate) fn identifier_at<'t>(tree: &'t Forest, offset: usize) -> Option<Node<'t>> {
    [offset, offset.saturating_sub(1)]
        .into_iter()
        .filter_map(|o| tree.descendant_for_byte_range(o, o))
        .find(|n| n.kind_name() == "identifier")
}

fn within(outer: Node, inner: Node) -> bool {
    outer.start_byte() <= inner.start_byte() && inner.end_byte() <= outer.end_byte()
}

/// The kernel whose `def` holds `node`.
fn enclosing_kernel(m: &FileModel, node: Node) -> Option<usize> {
    m.kernels.iter().position(|k| within(k.node, node))
}

/// The kernel a name resolves to at `at`: the definition last before it, else the first.
fn kernel_named(m: &FileModel, name: &str, at: usize) -> Option<usize> {
    let same: Vec<usize> = (0..m.kernels.len()).filter(|&i| m.kernels[i].name == name).collect();
    same.iter().rev().copied().find(|&i| m.kernels[i].node.start_byte() < at).or(same.first().copied())
}

fn is_module_level(node: Node) -> bool {
    let mut p = node.parent();
    while let Some(n) = p {
        if matches!(n.kind_name(), "function_definition" | "class_definition" | "lambda") {
            return false;
        }
        p = n.parent();
    }
    true
}

/// The first module-level assignment to `name`: its target's range.
fn module_const(m: &FileModel, name: &str) -> Option<TextRange> {
    m.host_fns.first()?.assigns.iter().filter(|a| a.target == name && is_module_level(a.node)).find_map(|a| {
        let left = a.node.child_by_field_name("left")?;
        let mut found = None;
        model::visit_nodes(left, &mut |n| {
            if found.is_none() && n.kind_name() == "identifier" && m.text(n) == name {
                found = Some(range_of(n));
            }
        });
        found
    })
}

/// The kernel launched or called by the call whose argument list holds the keyword argument `kw`.
fn callee_of_keyword(m: &FileModel, kw: Node) -> Option<usize> {
    let call = kw.parent()?.parent().filter(|c| c.kind_name() == "call")?;
    let f = call.child_by_field_name("function")?;
    let name = match f.kind_name() {
        "subscript" => f.child_by_field_name("value")?,
        "identifier" => f,
        _ => return None,
    };
    (name.kind_name() == "identifier").then(|| kernel_named(m, m.text(name), call.start_byte())).flatten()
}

/// What the identifier `node` stands for.
pub fn resolve(m: &FileModel, node: Node) -> Option<Target> {
    if node.kind_name() != "identifier" {
        return None;
    }
    let name = m.text(node);
    let parent = node.parent();
    // `BLOCK=...` at a launch or a helper call: the kernel's parameter.
    if let Some(kw) = parent.filter(|p| p.kind_name() == "keyword_argument") {
        if kw.child_by_field_name("name") == Some(node) {
            let k = callee_of_keyword(m, kw)?;
            return m.kernels[k].param(name).map(|_| Target::Param { kernel: k, name: name.to_string() });
        }
    }
    // `obj.name`: only a method of a class of this file, through `self`.
    if let Some(attr) = parent.filter(|p| p.kind_name() == "attribute") {
        if attr.child_by_field_name("attribute") == Some(node) {
            let object = attr.child_by_field_name("object").map(|o| m.text(o));
            if object != Some("self") {
                return None;
            }
            return m.host_fns.iter().position(|f| f.name == name && f.class.is_some()).map(Target::HostFn);
        }
    }
    if let Some(k) = enclosing_kernel(m, node) {
        if m.kernels[k].param(name).is_some() {
            return Some(Target::Param { kernel: k, name: name.to_string() });
        }
        if m.kernels[k].assigns.iter().any(|a| a.target == name) {
            return None;
        }
    }
    if let Some(k) = kernel_named(m, name, node.start_byte()) {
        return Some(Target::Kernel(k));
    }
    if let Some(c) = m.classes.iter().position(|c| c.name == name) {
        return Some(Target::Class(c));
    }
    let host = (1..m.host_fns.len()).filter(|&i| m.host_fns[i].name == name && m.host_fns[i].class.is_none());
    let host: Vec<usize> = host.collect();
    if let Some(&f) = host.iter().rev().find(|&&i| m.host_fns[i].node.start_byte() < node.start_byte()).or(host.first())
    {
        return Some(Target::HostFn(f));
    }
    module_const(m, name).map(|at| Target::ModuleConst { name: name.to_string(), at })
}

/// Where a target is defined: its name.
pub fn definition(m: &FileModel, t: &Target) -> TextRange {
    match t {
        Target::Kernel(k) => m.kernels[*k].name_range,
        Target::HostFn(f) => m.host_fns[*f].name_range,
        Target::Class(c) => m.classes[*c].name_range,
        Target::Param { kernel, name } => m.kernels[*kernel].param(name).map(|p| p.range).unwrap_or_default(),
        Target::ModuleConst { at, .. } => *at,
    }
}

fn target_name(m: &FileModel, t: &Target) -> String {
    match t {
        Target::Kernel(k) => m.kernels[*k].name.clone(),
        Target::HostFn(f) => m.host_fns[*f].name.clone(),
        Target::Class(c) => m.classes[*c].name.clone(),
        Target::Param { name, .. } | Target::ModuleConst { name, .. } => name.clone(),
    }
}

/// Every place the target is named (the definition first when `with_definition`),
/// in document order. A parameter's are inside its kernel, at keyword
/// arguments of the calls and launches that reach the kernel, and as keys of
/// its autotune configurations (`{"BLOCK": 64}`, inside the quotes).
pub fn references(m: &FileModel, t: &Target, with_definition: bool) -> Vec<TextRange> {
    let name = target_name(m, t);
    let def = definition(m, t);
    let mut out = Vec::new();
    let mut stack: Vec<Node> = m.tree.roots().collect();
    stack.reverse();
    let mut steps = 0usize;
    while let Some(n) = stack.pop() {
        steps += 1;
        if steps > 2_000_000 {
            break;
        }
        if n.kind_name() == "identifier" {
            if m.text(n) == name && range_of(n) != def && resolve(m, n).as_ref() == Some(t) {
                out.push(range_of(n));
            }
            continue;
        }
        if n.kind_name() == "string" {
            if let Target::Param { kernel, .. } = t {
                let k = &m.kernels[*kernel];
                let key = m.text(n).trim_matches(|c| c == '"' || c == '\'');
                if key == name && k.decorators.iter().any(|d| within(*d, n)) {
                    let quote = m.text(n).find(&name).unwrap_or(0);
                    out.push(TextRange::new(n.start_byte() + quote, n.start_byte() + quote + name.len()));
                }
            }
            continue;
        }
        let mut c = n.walk();
        let kids: Vec<Node> = n.children(&mut c).collect();
        stack.extend(kids.into_iter().rev());
    }
    if with_definition {
        out.push(def);
    }
    out.sort_by_key(|r| (r.start, r.end));
    out.dedup();
    out
}

/// Whether kernel `k` is a jit helper: called from other kernels, launched from none.
pub(crate) fn is_helper(m: &FileModel, k: &Kernel) -> bool {
    m.launches_of_kernel(k).next().is_none() && !m.kernel_calls_to(k).is_empty()
}

/// The whole statement a definition spans: with its decorators.
pub(crate) fn full_range(node: Node) -> TextRange {
    match node.parent() {
        Some(p) if p.kind_name() == "decorated_definition" => range_of(p),
        _ => range_of(node),
    }
}

/// A symbol of the file, for `documentSymbol` and `workspace/symbol`.
#[derive(Debug, Clone, PartialEq)]
pub struct Symbol {
    pub name: String,
    pub kind: SymbolKind,
    pub detail: String,
    pub range: TextRange,
    pub selection: TextRange,
    pub children: Vec<Symbol>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolKind {
    Kernel,
    Helper,
    Function,
    Method,
    Class,
    Constant,
    Parameter,
    ConstexprParameter,
}

fn kernel_symbol(m: &FileModel, k: &Kernel) -> Symbol {
    let helper = is_helper(m, k);
    let children = k
        .params
        .iter()
        .map(|p| Symbol {
            name: p.name.to_string(),
            kind: if p.constexpr { SymbolKind::ConstexprParameter } else { SymbolKind::Parameter },
            detail: if p.constexpr { "tl.constexpr".into() } else { String::new() },
            range: range_of(p.node),
            selection: p.range,
            children: Vec::new(),
        })
        .collect();
    let launches = m.launches_of_kernel(k).count();
    let detail = if helper {
        "@triton.jit helper".to_string()
    } else {
        format!("@triton.jit kernel, {launches} launch site{}", if launches == 1 { "" } else { "s" })
    };
    Symbol {
        name: k.name.clone(),
        kind: if helper { SymbolKind::Helper } else { SymbolKind::Kernel },
        detail,
        range: full_range(k.node),
        selection: k.name_range,
        children,
    }
}

/// The kernels of a file (for `workspace/symbol`), without their parameters.
pub(crate) fn kernel_symbols(m: &FileModel) -> Vec<Symbol> {
    m.kernels.iter().map(|k| Symbol { children: Vec::new(), ..kernel_symbol(m, k) }).collect()
}

/// The file's symbols, nested: kernels and helpers (their parameters inside),
/// classes (their methods inside), top-level functions, module constants.
pub(crate) fn document_symbols(m: &FileModel) -> Vec<Symbol> {
    let mut out: Vec<Symbol> =
        m.kernels.iter().filter(|k| is_module_level(k.node)).map(|k| kernel_symbol(m, k)).collect();
    for c in &m.classes {
        let children = m
            .host_fns
            .iter()
            .skip(1)
            .filter(|f| f.class.as_deref() == Some(c.name.as_str()) && within(c.node, f.node))
            .map(|f| Symbol {
                name: f.name.clone(),
                kind: SymbolKind::Method,
                detail: String::new(),
                range: full_range(f.node),
                selection: f.name_range,
                children: Vec::new(),
            })
            .collect();
        out.push(Symbol {
            name: c.name.clone(),
            kind: SymbolKind::Class,
            detail: String::new(),
            range: full_range(c.node),
            selection: c.name_range,
            children,
        });
    }
    for f in m.host_fns.iter().skip(1).filter(|f| f.class.is_none() && is_module_level(f.node)) {
        out.push(Symbol {
            name: f.name.clone(),
            kind: SymbolKind::Function,
            detail: if f.launches.is_empty() { String::new() } else { "launches kernels".into() },
            range: full_range(f.node),
            selection: f.name_range,
            children: Vec::new(),
        });
    }
    let mut seen = std::collections::HashSet::new();
    for a in m.host_fns.first().map(|f| f.assigns.as_slice()).unwrap_or_default() {
        if a.augmented || !is_module_level(a.node) || !seen.insert(a.target.clone()) {
            continue;
        }
        let Some(at) = module_const(m, &a.target) else { continue };
        out.push(Symbol {
            name: a.target.clone(),
            kind: SymbolKind::Constant,
            detail: String::new(),
            range: range_of(a.node),
            selection: at,
            children: Vec::new(),
        });
    }
    out.sort_by_key(|s| s.range.start);
    out
}

/// One end of a call: a kernel, a helper, a host function, or the module's top level.
#[derive(Debug, Clone, PartialEq)]
pub struct CallEnd {
    pub name: String,
    pub kind: SymbolKind,
    pub range: TextRange,
    pub selection: TextRange,
}

/// A caller or callee and the ranges of the calls between them.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub end: CallEnd,
    pub at: Vec<TextRange>,
}

fn kernel_end(m: &FileModel, k: usize) -> CallEnd {
    let kk = &m.kernels[k];
    let kind = if is_helper(m, kk) { SymbolKind::Helper } else { SymbolKind::Kernel };
    CallEnd { name: kk.name.clone(), kind, range: full_range(kk.node), selection: kk.name_range }
}

fn host_end(m: &FileModel, f: usize) -> CallEnd {
    if f == 0 {
        let all = m.tree.byte_range();
        let all = TextRange::new(all.start, all.end);
        return CallEnd {
            name: "<module>".into(),
            kind: SymbolKind::Function,
            range: all,
            selection: TextRange::new(0, 0),
        };
    }
    let h = &m.host_fns[f];
    let kind = if h.class.is_some() { SymbolKind::Method } else { SymbolKind::Function };
    CallEnd { name: h.name.clone(), kind, range: full_range(h.node), selection: h.name_range }
}

/// The call-hierarchy item at a position: a kernel, helper or host function.
pub(crate) fn call_item(m: &FileModel, t: &Target) -> Option<CallEnd> {
    match t {
        Target::Kernel(k) => Some(kernel_end(m, *k)),
        Target::HostFn(f) => Some(host_end(m, *f)),
        _ => None,
    }
}

/// The target an item names again (by its name and the start of its definition).
pub(crate) fn item_target(m: &FileModel, name: &str, selection_start: usize) -> Option<Target> {
    if let Some(k) = m.kernels.iter().position(|k| k.name == name && k.name_range.start == selection_start) {
        return Some(Target::Kernel(k));
    }
    if let Some(f) =
        (1..m.host_fns.len()).find(|&f| m.host_fns[f].name == name && m.host_fns[f].name_range.start == selection_start)
    {
        return Some(Target::HostFn(f));
    }
    let k = m.kernels.iter().position(|k| k.name == name).map(Target::Kernel);
    k.or_else(|| (1..m.host_fns.len()).find(|&f| m.host_fns[f].name == name).map(Target::HostFn))
}

fn push_call(out: &mut Vec<Call>, end: CallEnd, at: TextRange) {
    match out.iter_mut().find(|c| c.end == end) {
        Some(c) => c.at.push(at),
        None => out.push(Call { end, at: vec![at] }),
    }
}

/// The range of a call's callee name (`helper` in `helper(x)`, `k` in `k[grid](x)`).
fn callee_range(call: Node) -> TextRange {
    let f = call.child_by_field_name("function");
    let f = f.map(|f| if f.kind_name() == "subscript" { f.child_by_field_name("value").unwrap_or(f) } else { f });
    let f = f.map(|f| if f.kind_name() == "attribute" { f.child_by_field_name("attribute").unwrap_or(f) } else { f });
    f.map(range_of).unwrap_or_else(|| range_of(call))
}

/// Who calls the target: the host functions that launch a kernel and the
/// kernels that call a helper; the host functions that call a host function.
pub fn incoming(m: &FileModel, t: &Target) -> Vec<Call> {
    let mut out = Vec::new();
    match t {
        Target::Kernel(k) => {
            let kk = &m.kernels[*k];
            for l in m.launches_of_kernel(kk) {
                push_call(&mut out, host_end(m, l.host_fn), l.name_range);
            }
            for &(caller, c) in m.kernel_calls_to(kk) {
                push_call(&mut out, kernel_end(m, caller), callee_range(m.kernels[caller].calls[c].node));
            }
        }
        Target::HostFn(f) => {
            for (g, h) in m.host_fns.iter().enumerate() {
                for call in &h.calls {
                    if m.callees(g, call).contains(f) {
                        push_call(&mut out, host_end(m, g), callee_range(call.node));
                    }
                }
            }
        }
        _ => {}
    }
    out
}

/// What the target calls: the helpers a kernel calls; the kernels a host
/// function launches and the host functions it calls.
pub fn outgoing(m: &FileModel, t: &Target) -> Vec<Call> {
    let mut out = Vec::new();
    match t {
        Target::Kernel(k) => {
            for call in m.kernels[*k].calls.iter().filter(|c| c.tl_name.is_none()) {
                if let Some(h) = kernel_named(m, &call.callee, call.node.start_byte()) {
                    push_call(&mut out, kernel_end(m, h), callee_range(call.node));
                }
            }
        }
        Target::HostFn(f) => {
            for &li in &m.host_fns[*f].launches {
                let l = &m.launches[li];
                if let Some(k) = kernel_named(m, &l.kernel, l.node.start_byte()) {
                    push_call(&mut out, kernel_end(m, k), l.name_range);
                }
            }
            for call in &m.host_fns[*f].calls {
                for g in m.callees(*f, call) {
                    push_call(&mut out, host_end(m, g), callee_range(call.node));
                }
            }
        }
        _ => {}
    }
    out
}

#[cfg(test)]
#[path = "navigation_tests.rs"]
mod tests;
