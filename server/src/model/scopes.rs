//! Names and scopes: the definition a host call reaches (as Python resolves
//! the name where it is used), the names `triton` and `triton.language` are
//! imported as, and the integer a host expression stands for through the
//! constants its scope assigns.

use std::collections::HashMap;

use tree_sitter::Node;

use super::nodes::parse_int;
use super::{Assign, FileModel, HCall};
use crate::model::NodeKind;

/// Host functions by name (`FileModel::callees`): indexes into `host_fns`
/// sorted by name, then document order; all of them, and those at module
/// level. Two sorted lists, where a map of names would allocate a key and
/// two lists per name on every model (once per keystroke).
pub(super) struct FnIndex {
    all: Vec<usize>,
    module: Vec<usize>,
}

impl FnIndex {
    fn new(model: &FileModel) -> FnIndex {
        let fns = &model.host_fns;
        let key = |&i: &usize| (fns[i].name.as_str(), fns[i].node.start_byte());
        let mut all: Vec<usize> = (1..fns.len()).collect();
        all.sort_by(|a, b| key(a).cmp(&key(b)));
        #[cfg(debug_assertions)]
        for &i in &all {
            assert_eq!(fns[i].module_level, model.is_module_level(i), "module level of {}", fns[i].name);
        }
        let module = all.iter().copied().filter(|&i| fns[i].module_level).collect();
        FnIndex { all, module }
    }

    /// The functions named `name`, in document order: all, and those at module level.
    fn get<'i>(&'i self, model: &FileModel, name: &str) -> Option<(&'i [usize], &'i [usize])> {
        let name_of = |&i: &usize| model.host_fns[i].name.as_str();
        let all = super::file::named(&self.all, name, name_of);
        (!all.is_empty()).then(|| (all, super::file::named(&self.module, name, name_of)))
    }
}

impl<'a> FileModel<'a> {
    /// The host function a call reaches: the binding of its name visible at the
    /// call, as Python resolves it. Functions defined inside the caller (or a
    /// function enclosing it) come first, then methods of the caller's class,
    /// then the rest; among those of the nearest tier, the last definition
    /// before the call, else the first after it (a module-level name bound
    /// later in the file). One callee per call keeps a file that repeats the
    /// same definitions (a concatenated or generated module) linear: each copy
    /// relates only to its own definitions.
    pub(crate) fn callees(&self, caller: usize, call: &HCall) -> Vec<usize> {
        let class = self.host_fns[caller].class.as_deref();
        let at = call.node.start_byte();
        let index = self.fn_index.get_or_init(|| FnIndex::new(self));
        let start_of = |i: usize| self.host_fns[i].node.start_byte();
        // The definition of `name` nearest before the call that `fits`, else the first after it.
        let nearest_fitting = |name: &str, fits: &dyn Fn(usize) -> bool| -> Vec<usize> {
            let Some((all, _)) = index.get(self, name) else { return Vec::new() };
            let split = all.partition_point(|&i| start_of(i) < at);
            let before = all[..split].iter().rev().copied().inspect(|_| self.step(1)).find(|&i| fits(i));
            before
                .or_else(|| all[split..].iter().copied().inspect(|_| self.step(1)).find(|&i| fits(i)))
                .into_iter()
                .collect()
        };
        // `StepFunction.apply(...)` runs that autograd `Function`'s static `forward`.
        if let Some(class) = call.callee.strip_suffix(".apply") {
            return nearest_fitting("forward", &|i| self.host_fns[i].class.as_deref() == Some(class));
        }
        // `self.cell.step(...)`: a method of an object the instance holds, of a class defined here:
        // of the class `self.cell = Cell(...)` binds when there is one.
        if let Some(method) = call.callee.strip_prefix('.') {
            let held = field!(call.node, "function")
                .and_then(|f| field!(f, "object"))
                .and_then(|o| self.text(o).strip_prefix("self."))
                .map(|attr| self.held_modules(class, attr, at))
                .unwrap_or_default();
            let of_held: Vec<usize> = held
                .iter()
                .flat_map(|h| nearest_fitting(method, &|i| self.host_fns[i].class.as_deref() == Some(*h)))
                .collect();
            if !of_held.is_empty() {
                return of_held;
            }
            return nearest_fitting(method, &|i| self.host_fns[i].class.is_some() && i != caller);
        }
        // `Block()(x)`: calling a module runs its `forward`.
        if let Some(class) = call.callee.strip_suffix("()") {
            return nearest_fitting("forward", &|i| self.host_fns[i].class.as_deref() == Some(class));
        }
        let Some((candidates, module_level)) = index.get(self, &call.callee) else {
            // `self.cell(x)`, where `self.cell = Cell(...)` and `Cell` is a module of this file: its `forward`.
            let is_self_call =
                field!(call.node, "function").and_then(|f| field!(f, "object")).is_some_and(|o| self.text(o) == "self");
            if !is_self_call {
                return Vec::new();
            }
            return self
                .held_modules(class, &call.callee, at)
                .iter()
                .flat_map(|h| nearest_fitting("forward", &|i| self.host_fns[i].class.as_deref() == Some(*h)))
                .collect();
        };
        // Definitions inside the top-level statement that holds the call: only they can be local.
        // (Every node of the tree lies in a top-level statement.)
        let top = self.top_statement(at).unwrap_or(call.node);
        let lo = candidates.partition_point(|&i| start_of(i) < top.start_byte());
        let hi = candidates.partition_point(|&i| start_of(i) < top.end_byte());
        let local = &candidates[lo..hi];
        self.step(local.len() + 1);
        // The nearest enclosing definition of `kind` around a function's def, and whether it holds the call.
        let enclosing_holds_call = |i: usize, kind: &str| {
            let mut n = self.host_fns[i].node.parent();
            while let Some(p) = n {
                if p.kind_name() == kind {
                    return p.start_byte() <= at && at < p.end_byte();
                }
                if p.kind_name() == "function_definition" || p.kind_name() == "class_definition" {
                    return false;
                }
                n = p.parent();
            }
            false
        };
        let nearest = |in_tier: &[usize]| -> Option<usize> {
            in_tier.iter().copied().rfind(|&i| start_of(i) < at).or_else(|| in_tier.first().copied())
        };
        let local_tiers: [&dyn Fn(usize) -> bool; 2] = [&|i| enclosing_holds_call(i, "function_definition"), &|i| {
            class.is_some() && enclosing_holds_call(i, "class_definition")
        }];
        for tier in local_tiers {
            let in_tier: Vec<usize> = local.iter().copied().filter(|&i| tier(i)).collect();
            if let Some(pick) = nearest(&in_tier) {
                return vec![pick];
            }
        }
        // Module-level bindings in order: the last definition before the call, else the first after.
        let split = module_level.partition_point(|&i| start_of(i) < at);
        let before = split.checked_sub(1).map(|j| module_level[j]);
        if let Some(pick) = before.or_else(|| module_level.get(split).copied()) {
            self.step(1);
            return vec![pick];
        }
        // Not visible by scope (`obj.helper()`, a method of another class): same class name first, then any.
        self.step(candidates.len());
        let same_class: Vec<usize> = candidates
            .iter()
            .copied()
            .filter(|&i| class.is_some() && self.host_fns[i].class.as_deref() == class)
            .collect();
        if let Some(pick) = nearest(&same_class) {
            return vec![pick];
        }
        candidates.to_vec()
    }

    /// The classes of this file that `self.attr = Class(...)` binds in class
    /// `class` (also inside `nn.Sequential(...)` / `nn.ModuleList([...])`).
    /// Every class's bindings are read once, on the first question.
    fn held_modules(&self, class: Option<&str>, attr: &str, at: usize) -> Vec<&'a str> {
        let Some(class) = class else { return Vec::new() };
        let Some(ci) = self.classes.iter().rposition(|c| c.name == class && c.node.start_byte() <= at) else {
            return Vec::new();
        };
        self.step(1);
        let index = self.held_index.get_or_init(|| {
            let mut index: HashMap<(usize, String), Vec<&'a str>> = HashMap::new();
            for (ci, info) in self.classes.iter().enumerate() {
                // `self.attr = ...` is a statement: expressions hold none, so they are not entered.
                super::nodes::visit_statements(info.node, &mut |n| {
                    if n.kind_name() != "assignment" {
                        return;
                    }
                    let (Some(left), Some(right)) = (field!(n, "left"), field!(n, "right")) else { return };
                    let Some(attr) = self.text(left).strip_prefix("self.") else { return };
                    // The module built there, or those a container built there holds.
                    super::nodes::visit_nodes(right, &mut |c| {
                        let Some(f) =
                            field!(c, "function").filter(|f| c.kind_name() == "call" && f.kind_name() == "identifier")
                        else {
                            return;
                        };
                        let name = self.text(f);
                        if self.classes.iter().any(|k| k.name == name) {
                            let held = index.entry((ci, attr.to_string())).or_default();
                            if !held.contains(&name) {
                                held.push(name);
                            }
                        }
                    });
                });
            }
            index
        });
        index.get(&(ci, attr.to_string())).cloned().unwrap_or_default()
    }

    /// Whether host function `i` is a top-level statement, or the definition
    /// of a decorated one, read from the tree (what the walk records as
    /// [`super::HostFn::module_level`]: checked against it in debug builds).
    #[cfg(debug_assertions)]
    fn is_module_level(&self, i: usize) -> bool {
        let def = self.host_fns[i].node;
        self.top_statement(def.start_byte()).is_some_and(|top| {
            top == def || (top.kind_name() == "decorated_definition" && field!(top, "definition") == Some(def))
        })
    }

    /// Integer value of a host expression where it is written as a literal,
    /// a constant assigned in the same function or at module level, or
    /// simple arithmetic of those.
    pub(crate) fn eval_int(&self, f: usize, node: Node, depth: usize) -> Option<i64> {
        if depth > 8 {
            return None;
        }
        let t = self.text(node).trim();
        match node.kind_name() {
            "integer" => parse_int(t),
            "parenthesized_expression" => node.named_child(0).and_then(|n| self.eval_int(f, n, depth + 1)),
            "identifier" => {
                for scope in [f, 0] {
                    let assigns: Vec<&Assign> =
                        self.host_fns[scope].assigns.iter().filter(|a| a.target == t && !a.augmented).collect();
                    if assigns.len() == 1 {
                        return self.eval_int(scope, assigns[0].value, depth + 1);
                    }
                    if !assigns.is_empty() {
                        return None;
                    }
                }
                None
            }
            "binary_operator" => {
                let l = self.eval_int(f, field!(node, "left")?, depth + 1)?;
                let r = self.eval_int(f, field!(node, "right")?, depth + 1)?;
                match self.text(field!(node, "operator")?) {
                    "+" => l.checked_add(r),
                    "-" => l.checked_sub(r),
                    "*" => l.checked_mul(r),
                    "//" if r != 0 => Some(l.div_euclid(r)),
                    "**" if (0..63).contains(&r) => l.checked_pow(r as u32),
                    "<<" if (0..63).contains(&r) => l.checked_shl(r as u32),
                    _ => None,
                }
            }
            "call" => {
                let func = self.text(field!(node, "function")?);
                if func.ends_with("next_power_of_2") {
                    let arg = field!(node, "arguments")?.named_child(0)?;
                    let v = self.eval_int(f, arg, depth + 1)?;
                    return (v > 0).then(|| (v as u64).next_power_of_two() as i64);
                }
                None
            }
            _ => None,
        }
    }

    /// The integer literal a host expression stands for: the literal itself,
    /// or the literal a constant was assigned once (where an edit must go).
    pub(crate) fn int_literal_node(&self, f: usize, node: Node<'a>) -> Option<Node<'a>> {
        match node.kind_name() {
            "integer" => Some(node),
            "identifier" => {
                let name = self.text(node);
                for scope in [f, 0] {
                    let assigns: Vec<&Assign<'a>> =
                        self.host_fns[scope].assigns.iter().filter(|a| a.target == name).collect();
                    match assigns.as_slice() {
                        [one] if !one.augmented && one.value.kind_name() == "integer" => return Some(one.value),
                        [] => continue,
                        _ => return None,
                    }
                }
                None
            }
            _ => None,
        }
    }
}

/// Names bound to `triton.language` and to `triton` by the module's imports
/// (`tl` and `triton` when there are none but the file imports Triton
/// somewhere, inside a function say, or decorates a function `@triton.jit`;
/// both empty when it does neither: such a file has no Triton kernels and no
/// `tl.X`).
pub fn imports(root: Node, src: &str) -> (Vec<String>, Vec<String>) {
    let mut cursor = root.walk();
    let statements: Vec<Node> = root.children(&mut cursor).collect();
    imports_of(&statements, src)
}

/// The import statements among `statements` and the blocks nested in them
/// (`try:`, `if`, function bodies), with whether each is at module level
/// (directly or inside `try`/`if`/`with`, not inside a function or class).
fn import_statements<'t>(statements: &[Node<'t>], module_level: bool, out: &mut Vec<(Node<'t>, bool)>) {
    let mut work: Vec<(Node<'t>, bool, usize)> = statements.iter().rev().map(|&n| (n, module_level, 0)).collect();
    while let Some((n, module_level, depth)) = work.pop() {
        let kind = n.kind_name();
        let nested = match kind {
            "import_statement" | "import_from_statement" => {
                out.push((n, module_level));
                continue;
            }
            "function_definition" | "class_definition" => false,
            "block"
            | "if_statement"
            | "try_statement"
            | "with_statement"
            | "for_statement"
            | "while_statement"
            | "decorated_definition" => module_level,
            k if k.ends_with("_clause") => module_level,
            _ => continue,
        };
        if depth > 64 {
            continue;
        }
        let mut c = n.walk();
        let children: Vec<Node<'t>> = n.named_children(&mut c).collect();
        work.extend(children.into_iter().rev().map(|ch| (ch, nested, depth + 1)));
    }
}

/// The module a `from M import name` statement among `statements` (or the
/// blocks nested in them) binds `name` from, the first one found.
pub(crate) fn bound_from(statements: &[Node], src: &str, name: &str) -> Option<String> {
    let text = |n: Node| src.get(n.byte_range()).unwrap_or("");
    let mut found = Vec::new();
    import_statements(statements, true, &mut found);
    for (stmt, _) in found.into_iter().filter(|(s, _)| s.kind_name() == "import_from_statement") {
        let module = field!(stmt, "module_name").map(text).unwrap_or("");
        let mut c = stmt.walk();
        for n in stmt.children_by_field_name("name", &mut c) {
            let bound = match n.kind_name() {
                "aliased_import" => field!(n, "alias").map(text).unwrap_or(""),
                _ => text(n),
            };
            if bound == name {
                return Some(module.to_string());
            }
        }
    }
    None
}

/// [`imports`] from the module's top-level statements.
/// Whether `statements` (or the blocks nested in them) import Triton anywhere:
/// then a `@triton.` decorator cannot change what `imports_of` answers.
pub(crate) fn triton_imported(statements: &[Node], src: &str) -> bool {
    let mut found = Vec::new();
    import_statements(statements, true, &mut found);
    any_imports_triton(&found, src)
}

fn any_imports_triton(found: &[(Node, bool)], src: &str) -> bool {
    let text = |n: Node| src.get(n.byte_range()).unwrap_or("");
    let is_triton = |m: &str| m == "triton" || m.starts_with("triton.");
    found.iter().any(|(stmt, _)| match stmt.kind_name() {
        "import_from_statement" => field!(*stmt, "module_name").map(text).is_some_and(is_triton),
        _ => {
            let mut c = stmt.walk();
            let any = stmt.named_children(&mut c).any(|n| {
                let name = if n.kind_name() == "aliased_import" { field!(n, "name").map(text) } else { Some(text(n)) };
                name.is_some_and(is_triton)
            });
            any
        }
    })
}

pub(crate) fn imports_of(statements: &[Node], src: &str) -> (Vec<String>, Vec<String>) {
    let text = |n: Node| src.get(n.byte_range()).unwrap_or("");
    let mut tl_aliases = Vec::new();
    let mut triton_aliases = Vec::new();
    let mut found = Vec::new();
    import_statements(statements, true, &mut found);
    let imports_triton = any_imports_triton(&found, src);
    // A fragment that decorates a function `@triton.jit` (or `@triton.autotune`)
    // is Triton code whose import is missing; anything else is not Triton code.
    let triton_decorated = statements.iter().any(|s| {
        s.kind_name() == "decorated_definition" && {
            let mut c = s.walk();
            let any = s
                .named_children(&mut c)
                .filter(|d| d.kind_name() == "decorator")
                .any(|d| text(d).trim_start_matches('@').trim_start().starts_with("triton."));
            any
        }
    });
    if !imports_triton && !triton_decorated {
        return (Vec::new(), Vec::new());
    }
    for (stmt, module_level) in found {
        if !module_level {
            continue;
        }
        match stmt.kind_name() {
            "import_statement" => {
                let mut c = stmt.walk();
                for child in stmt.named_children(&mut c) {
                    match child.kind_name() {
                        "aliased_import" => {
                            let name = field!(child, "name").map(text);
                            let alias = field!(child, "alias").map(|n| text(n).to_string());
                            match (name, alias) {
                                (Some("triton.language"), Some(a)) => tl_aliases.push(a),
                                (Some("triton"), Some(a)) => triton_aliases.push(a),
                                _ => {}
                            }
                        }
                        "dotted_name" if text(child) == "triton" || text(child) == "triton.language" => {
                            triton_aliases.push("triton".to_string())
                        }
                        _ => {}
                    }
                }
            }
            "import_from_statement" => {
                let module = field!(stmt, "module_name").map(text).unwrap_or("");
                let mut c = stmt.walk();
                for name in stmt.children_by_field_name("name", &mut c) {
                    let (orig, alias) = match name.kind_name() {
                        "aliased_import" => (
                            field!(name, "name").map(text).unwrap_or(""),
                            field!(name, "alias").map(text).unwrap_or(""),
                        ),
                        _ => (text(name), text(name)),
                    };
                    if module == "triton" && orig == "language" {
                        tl_aliases.push(alias.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    if tl_aliases.is_empty() {
        tl_aliases.push("tl".to_string());
    }
    if triton_aliases.is_empty() {
        triton_aliases.push("triton".to_string());
    }
    (tl_aliases, triton_aliases)
}

/// The names the top-level statement `unit` may read from the module scope,
/// sorted: every identifier it uses (not an attribute's or a keyword
/// argument's name), less, in a plain function, the names the function binds
/// in its own scope (Python makes them local throughout it). A superset where
/// in doubt: a class, a `global` or `nonlocal` declaration or a `match` keeps
/// every identifier, and names bound only inside a nested scope (a lambda, a
/// comprehension, a nested function's body) are not subtracted. What the
/// decorators, parameter defaults and annotations name is read at definition
/// time, from the module, and is always kept.
pub(crate) fn module_reads(unit: Node, src: &str) -> Vec<String> {
    let func = match unit.kind_name() {
        "function_definition" => Some(unit),
        "decorated_definition" => field!(unit, "definition").filter(|d| d.kind_name() == "function_definition"),
        _ => None,
    };
    let text = |n: Node| src.get(n.byte_range()).unwrap_or_default();
    let mut outer: Vec<&str> = Vec::new();
    let mut inner: Vec<&str> = Vec::new();
    let mut bound: Vec<&str> = Vec::new();
    let mut give_up = func.is_none();
    match func {
        Some(f) => {
            // Decorators, defaults, annotations: the module's scope.
            if unit.kind_name() == "decorated_definition" {
                for d in unit.named_children(&mut unit.walk()).filter(|c| c.kind_name() == "decorator") {
                    used_identifiers(d, src, &mut outer);
                }
            }
            if let Some(t) = field!(f, "return_type") {
                used_identifiers(t, src, &mut outer);
            }
            if let Some(params) = field!(f, "parameters") {
                for p in params.named_children(&mut params.walk()) {
                    for field in ["value", "type"] {
                        if let Some(v) = p.child_by_field_name(field) {
                            used_identifiers(v, src, &mut outer);
                        }
                    }
                    if let Some(name) = parameter_name(p) {
                        bound.push(text(name));
                    }
                }
            }
            if let Some(body) = field!(f, "body") {
                scope_walk(body, src, false, &mut inner, &mut bound, &mut give_up);
            }
        }
        None => used_identifiers(unit, src, &mut inner),
    }
    if !give_up {
        bound.sort_unstable();
        inner.retain(|n| bound.binary_search(n).is_err());
    }
    let mut out: Vec<String> = outer.into_iter().chain(inner).map(str::to_string).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The names the import statements in `unit` (at any depth) bind: `a` for
/// `import a.b`, `c` for `import a.b as c` or `from m import c`, `d` for
/// `from m import c as d`; `*` for a wildcard import (it may bind any name).
pub(crate) fn import_binds(unit: Node, src: &str) -> Vec<String> {
    let mut out: Vec<String> = import_bound(unit, src).into_iter().map(str::to_string).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// [`import_binds`], borrowed from `src`, in document order.
fn import_bound<'s>(unit: Node, src: &'s str) -> Vec<&'s str> {
    let text = |n: Node| src.get(n.byte_range()).unwrap_or_default();
    let mut out = Vec::new();
    crate::model::visit_nodes(unit, &mut |n| {
        if !matches!(n.kind_name(), "import_statement" | "import_from_statement") {
            return;
        }
        let mut cursor = n.walk();
        for name in n.children_by_field_name("name", &mut cursor) {
            let bound = match name.kind_name() {
                "aliased_import" => field!(name, "alias").map(text),
                // `import a.b` binds `a`; `from m import c` binds `c`.
                _ if n.kind_name() == "import_statement" => name.named_child(0).map(text),
                _ => Some(text(name)),
            };
            out.extend(bound);
        }
        if n.named_children(&mut n.walk()).any(|c| c.kind_name() == "wildcard_import") {
            out.push("*");
        }
    });
    out
}

/// The name a parameter binds (`x`, `x: T`, `x=1`, `*args`, `**kwargs`).
fn parameter_name(p: Node) -> Option<Node> {
    let name = match p.kind_name() {
        "identifier" => Some(p),
        "default_parameter" | "typed_default_parameter" => field!(p, "name"),
        "typed_parameter" => p.named_child(0).and_then(parameter_name),
        "list_splat_pattern" | "dictionary_splat_pattern" => p.named_child(0),
        _ => None,
    };
    name.filter(|n| n.kind_name() == "identifier")
}

/// The identifiers `node` uses, as [`module_reads`] counts them, into `out`.
fn used_identifiers<'s>(node: Node, src: &'s str, out: &mut Vec<&'s str>) {
    let mut give_up = true;
    scope_walk(node, src, true, out, &mut Vec::new(), &mut give_up);
}

/// Walks `node` with one tree cursor, without recursion (a hostile file
/// nests 50,000 deep): the identifiers used into `used`; unless `nested`
/// (inside a scope of its own), the names bound into `bound`. Sets
/// `give_up` where the subtraction would not be sound.
fn scope_walk<'s>(
    node: Node,
    src: &'s str,
    nested: bool,
    used: &mut Vec<&'s str>,
    bound: &mut Vec<&'s str>,
    give_up: &mut bool,
) {
    let mut found = Found { src, used, bound, give_up };
    let mut cursor = node.walk();
    // For each level below `node`: whether its nodes are in a nested scope,
    // and the field of the parent whose node is skipped.
    let mut levels: Vec<(bool, Option<&'static str>)> = Vec::new();
    loop {
        let node = cursor.node();
        let visit = match levels.last() {
            None => Some(nested),
            // Only named children; an attribute's name (`x.shape`) and a keyword argument's (`dim=0`) are not names read.
            Some(&(inner, skip)) => {
                (node.is_named() && (skip.is_none() || cursor.field_name() != skip)).then_some(inner)
            }
        };
        let mut descend = None;
        if let Some(nested) = visit {
            descend = found.enter(node, nested);
        }
        if let Some(level) = descend {
            if cursor.goto_first_child() {
                levels.push(level);
                continue;
            }
        }
        loop {
            if levels.is_empty() {
                return;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            cursor.goto_parent();
            levels.pop();
        }
    }
}

/// Where [`scope_walk`] puts what it finds.
struct Found<'s, 'w> {
    src: &'s str,
    used: &'w mut Vec<&'s str>,
    bound: &'w mut Vec<&'s str>,
    give_up: &'w mut bool,
}

impl<'s> Found<'s, '_> {
    /// What [`scope_walk`] does at `node` (in a nested scope or not); whether,
    /// and how, it descends: whether its children are in a nested scope, and
    /// the field whose child is skipped.
    fn enter(&mut self, node: Node, nested: bool) -> Option<(bool, Option<&'static str>)> {
        if plain_kind(node.kind_id()) {
            return Some((nested, None));
        }
        let Found { src, used, bound, give_up } = self;
        let src: &'s str = src;
        let text = |n: Node| src.get(n.byte_range()).unwrap_or_default();
        let kind = node.kind_name();
        match kind {
            "identifier" => {
                used.push(text(node));
                return None;
            }
            "global_statement" | "nonlocal_statement" | "match_statement" => **give_up = true,
            _ => {}
        }
        let mut inner = nested;
        if !nested {
            match kind {
                "assignment" | "augmented_assignment" | "for_statement" => {
                    if let Some(left) = field!(node, "left") {
                        bind_targets(left, src, bound);
                    }
                }
                "named_expression" => {
                    if let Some(name) = field!(node, "name") {
                        bind_targets(name, src, bound);
                    }
                }
                "as_pattern" => {
                    if let Some(alias) = field!(node, "alias") {
                        bind_targets(alias, src, bound);
                    }
                }
                "delete_statement" => {
                    for c in node.named_children(&mut node.walk()) {
                        bind_targets(c, src, bound);
                    }
                }
                "import_statement" | "import_from_statement" => {
                    let names = import_bound(node, src);
                    // `from m import *` may bind any name.
                    **give_up |= names.contains(&"*");
                    bound.extend(names);
                }
                "function_definition" | "class_definition" => {
                    if let Some(name) = field!(node, "name") {
                        bound.push(text(name));
                    }
                    inner = true;
                }
                "lambda"
                | "list_comprehension"
                | "set_comprehension"
                | "dictionary_comprehension"
                | "generator_expression" => inner = true,
                _ => {}
            }
        }
        let skip = match kind {
            "attribute" => Some("attribute"),
            "keyword_argument" => Some("name"),
            _ => None,
        };
        Some((inner, skip))
    }
}

/// Whether [`Found::enter`] only descends into a node of this kind (most
/// nodes: calls, operators, blocks, literals), decided once per kind rather
/// than by comparing the kind's name with each it acts on.
fn plain_kind(id: u16) -> bool {
    const ACTS_ON: &str = "identifier global_statement nonlocal_statement match_statement assignment \
        augmented_assignment for_statement named_expression as_pattern delete_statement import_statement \
        import_from_statement function_definition class_definition lambda list_comprehension set_comprehension \
        dictionary_comprehension generator_expression attribute keyword_argument";
    static PLAIN: std::sync::OnceLock<Vec<bool>> = std::sync::OnceLock::new();
    let plain = PLAIN.get_or_init(|| {
        let language = super::language();
        (0..language.node_kind_count())
            .map(|id| {
                let name = language.node_kind_for_id(id as u16).unwrap_or("");
                !ACTS_ON.split_whitespace().any(|k| k == name)
            })
            .collect()
    });
    plain.get(id as usize).copied().unwrap_or(false)
}

/// The names a line of the module sets from a version at column 0
/// (`TRITON3 = version.parse(triton.__version__) >= ...`): read in one pass
/// over the text (KL005 reads them, on the first condition that needs them;
/// the checker, for the lines an edit changed).
pub(crate) fn version_flags(src: &str) -> std::collections::HashSet<&str> {
    src.lines()
        .filter_map(|l| {
            let end = l.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(l.len());
            let value = l[end..].trim_start().strip_prefix('=')?;
            (end > 0 && !value.starts_with('=') && value.contains("version")).then(|| &l[..end])
        })
        .collect()
}

/// The names an assignment target binds: identifiers, and those inside
/// tuple and list patterns (not attributes or subscripts); without recursion.
fn bind_targets<'s>(target: Node, src: &'s str, bound: &mut Vec<&'s str>) {
    let mut work = vec![target];
    while let Some(target) = work.pop() {
        match target.kind_name() {
            "identifier" => bound.push(src.get(target.byte_range()).unwrap_or_default()),
            "pattern_list"
            | "tuple_pattern"
            | "list_pattern"
            | "tuple"
            | "list"
            | "parenthesized_expression"
            | "list_splat_pattern"
            | "list_splat"
            | "expression_list"
            | "as_pattern_target" => {
                work.extend(target.named_children(&mut target.walk()));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::module_reads;

    fn reads(src: &str) -> Vec<String> {
        let tree = crate::model::parse(src, None);
        let unit = tree.root_node().named_child(0).expect("a statement");
        module_reads(unit, src)
    }

    #[test]
    fn a_function_reads_the_names_it_does_not_bind() {
        let r = reads("def f(x, n=N, *args, b: T = 1, **kw):\n    y = x + G\n    for i in range(n):\n        z, (w, v) = i, (1, 2)\n    return y + z + H(dim=x.shape) + args + kw + w\n");
        assert_eq!(r, ["G", "H", "N", "T", "range"]);
    }

    #[test]
    fn defaults_and_decorators_are_read_from_the_module_though_a_parameter_shares_the_name() {
        let r = reads("@jit(debug=D)\ndef f(B=B):\n    return B\n");
        assert_eq!(r, ["B", "D", "jit"]);
    }

    #[test]
    fn nested_scopes_and_declarations_keep_what_may_be_global() {
        // A lambda's or a comprehension's own names are not subtracted (a superset).
        let r = reads("def f(x):\n    g = lambda a: a + K\n    return [i for i in I] + g(x)\n");
        assert_eq!(r, ["I", "K", "a", "i"]);
        // A name bound only in a nested function is the outer function's global.
        let r = reads("def f():\n    def g():\n        y = 1\n        return y\n    return g() + y\n");
        assert_eq!(r, ["y"]);
        // `from torch import nn` binds `nn`, not `torch`.
        let r = reads("def f():\n    from torch import nn\n    return torch.x + nn\n");
        assert_eq!(r, ["torch"]);
        // `global` keeps every name.
        let r = reads("def f():\n    global G\n    G = 1\n    return G\n");
        assert_eq!(r, ["G"]);
        // A class keeps every name.
        let r = reads("class C:\n    x = 1\n    def m(self):\n        return x\n");
        assert_eq!(r, ["C", "m", "self", "x"]);
        // A module-level statement reads every name it uses.
        assert_eq!(reads("y = x + 1\n"), ["x", "y"]);
    }

    #[test]
    fn imports_bind_their_first_name_or_alias() {
        let binds = |src: &str| {
            let tree = crate::model::parse(src, None);
            super::import_binds(tree.root_node(), src)
        };
        assert_eq!(
            binds("import torch.nn.functional as F, os.path\nfrom a.b import c, d as e\n"),
            ["F", "c", "e", "os"]
        );
        assert_eq!(binds("def f():\n    import math\n    from m import *\n"), ["*", "math"]);
    }
}
