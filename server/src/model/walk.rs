//! The one walk over the syntax tree that fills a [`FileModel`]: kernels and
//! their parameters, host functions, classes, loops (with their range
//! bounds), calls, launches, host syncs, assignments, subscripts, products,
//! `tl.*` attributes and `# kernel-lsp:` comments. One tree cursor, numeric
//! kind ids, and a depth limit: the walk is linear and never overflows the stack.

use tree_sitter::Node;

use super::nodes::{call_arguments, range_of, MAX_DEPTH};
use super::{
    Assign, ClassInfo, Directive, FileModel, HCall, HostFn, HostSync, KCall, Kernel, Launch, Loop, LoopKind, Param,
    Suppression,
};
use crate::model::NodeKind;
use crate::text::TextRange;

/// Numeric ids of the node kinds the walk acts on.
struct Kinds {
    interesting: Vec<u16>,
}

fn kinds() -> &'static Kinds {
    static KINDS: std::sync::OnceLock<Kinds> = std::sync::OnceLock::new();
    KINDS.get_or_init(|| {
        let language = super::language();
        let names = [
            "comment",
            "decorated_definition",
            "function_definition",
            "class_definition",
            "for_statement",
            "while_statement",
            "call",
            "assignment",
            "augmented_assignment",
            "subscript",
            "binary_operator",
            "attribute",
            "import_from_statement",
        ];
        Kinds { interesting: names.iter().map(|n| language.id_for_node_kind(n, true)).filter(|id| *id != 0).collect() }
    })
}

#[derive(Clone, Copy)]
pub(super) enum Scope {
    Host(usize),
    Kernel(usize),
}

pub(super) struct Walker<'m, 'a> {
    pub(super) m: &'m mut FileModel<'a>,
    pub(super) pending_launches: Vec<Launch<'a>>,
    /// Record kernels' headers only, not walking their bodies (`FileModel::build_stubbed`).
    pub(super) stub_kernels: bool,
    /// The node index ([`super::NodeIndex`]) of the statements walked, noted
    /// as the walk meets their nodes, and the parts it does not enter read
    /// for it alone: one pass over the tree instead of two. `None`: not kept.
    pub(super) index: Option<super::index::NodeIndex<'a>>,
}

impl<'m, 'a> Walker<'m, 'a> {
    fn text(&self, n: Node) -> &'a str {
        self.m.text(n)
    }

    /// Notes `node` and everything under it in the node index (the walk does not enter it).
    fn index_only(&mut self, node: Node<'a>) {
        let src = self.m.src;
        if let Some(index) = self.index.as_mut() {
            super::nodes::visit_nodes(node, &mut |n| index.note(n, src));
        }
    }

    /// [`Self::index_only`] on each child of `node` but those in `entered` (the walk enters them).
    fn index_children_but(&mut self, node: Node<'a>, entered: &[Option<Node<'a>>]) {
        if self.index.is_none() {
            return;
        }
        let mut cursor = node.walk();
        for c in node.children(&mut cursor) {
            if !entered.contains(&Some(c)) {
                self.index_only(c);
            }
        }
    }

    /// Walks a top-level statement that was to be read as a stub and could
    /// not be: the node index lists only the statements walked as such.
    pub(super) fn visit_unindexed(&mut self, unit: Node<'a>) {
        let index = self.index.take();
        self.visit(unit, Scope::Host(0), &mut Vec::new(), None, 1);
        self.index = index;
    }

    /// Visits `root` and everything below it with one tree cursor.
    pub(super) fn visit(
        &mut self,
        root: Node<'a>,
        scope: Scope,
        loops: &mut Vec<usize>,
        class: Option<&str>,
        depth: usize,
    ) {
        if depth > MAX_DEPTH {
            self.index_only(root);
            return;
        }
        let kinds = kinds();
        let mut cursor = root.walk();
        let mut level = 0usize;
        loop {
            let node = cursor.node();
            if let Some(index) = self.index.as_mut() {
                index.note(node, self.m.src);
            }
            // Most nodes are none of the kinds `enter` acts on: compare numeric kind ids, not strings.
            let descend = (!kinds.interesting.contains(&node.kind_id())
                || self.enter(node, scope, loops, class, depth + level))
                && !self.only_plain_leaves(node);
            if descend && depth + level < MAX_DEPTH && cursor.goto_first_child() {
                level += 1;
                continue;
            }
            if descend && depth + level >= MAX_DEPTH {
                self.index_only(node);
            }
            loop {
                if level == 0 {
                    return;
                }
                if cursor.goto_next_sibling() {
                    break;
                }
                cursor.goto_parent();
                level -= 1;
            }
        }
    }

    /// Whether every child of `node` is a leaf that neither the walk nor the
    /// node index acts on: no child has children (tree-sitter counts both in
    /// O(1)), and the text holds no comment and no `__builtins__` (the only
    /// leaves either notes). An argument list of names and numbers, a dotted
    /// name, a parameter list: most leaves of a file are in such a node, and
    /// stepping a cursor over each costs more than this test.
    fn only_plain_leaves(&self, node: Node) -> bool {
        let children = node.child_count();
        if children == 0 || node.descendant_count() != children as usize + 1 {
            return false;
        }
        let Some(text) = self.m.src.get(node.start_byte()..node.end_byte()) else { return false };
        !text.contains('#') && !text.contains("__builtins__")
    }

    /// Records what `node` is; returns whether the walk should descend into it
    /// (definitions and loops walk their own parts).
    fn enter(
        &mut self,
        node: Node<'a>,
        scope: Scope,
        loops: &mut Vec<usize>,
        class: Option<&str>,
        depth: usize,
    ) -> bool {
        match node.kind_name() {
            "comment" => {
                self.comment(node);
            }
            "decorated_definition" => {
                let def = field!(node, "definition");
                self.index_children_but(node, &[def]);
                if let Some(def) = def {
                    let mut c = node.walk();
                    let decorators: Vec<Node<'a>> = node
                        .named_children(&mut c)
                        .filter(|n| n.kind_name() == "decorator")
                        .filter_map(|d| d.named_child(0))
                        .collect();
                    for d in &decorators {
                        self.visit(*d, scope, loops, class, depth + 1);
                    }
                    if def.kind_name() == "function_definition" {
                        self.function(def, decorators, class, depth);
                    } else {
                        self.visit(def, scope, loops, class, depth + 1);
                    }
                }
                return false;
            }
            "function_definition" => {
                self.function(node, Vec::new(), class, depth);
                return false;
            }
            "class_definition" => {
                let name = field!(node, "name").map(|n| self.text(n).to_string()).unwrap_or_default();
                let name_range = field!(node, "name").map(range_of).unwrap_or_default();
                self.m.classes.push(ClassInfo { name: name.clone(), name_range, node });
                self.index_children_but(node, &[field!(node, "body")]);
                if let Some(body) = field!(node, "body") {
                    self.visit(body, scope, loops, Some(&name), depth + 1);
                }
                return false;
            }
            "for_statement" | "while_statement" => {
                self.loop_stmt(node, scope, loops, class, depth);
                return false;
            }
            "call" => {
                self.call(node, scope, loops);
            }
            "assignment" | "augmented_assignment" => {
                self.assignment(node, scope, loops);
            }
            "subscript" => {
                if let Scope::Kernel(k) = scope {
                    self.m.kernels[k].subscripts.push((node, loops.clone()));
                }
            }
            "binary_operator" => {
                if let Scope::Kernel(k) = scope {
                    let op = field!(node, "operator").map(|o| self.text(o));
                    if op == Some("*") {
                        if let (Some(l), Some(r)) = (field!(node, "left"), field!(node, "right")) {
                            let (lt, rt) = (self.text(l).to_string(), self.text(r).to_string());
                            self.m.kernels[k].products.push((lt, rt));
                        }
                    }
                }
            }
            "attribute" => {
                if let (Some(obj), Some(attr)) = (field!(node, "object"), field!(node, "attribute")) {
                    let obj_text = self.text(obj);
                    let is_tl = |o: Node, text: &str| {
                        (o.kind_name() == "identifier" && self.m.is_tl_alias(text)) || text == "triton.language"
                    };
                    if is_tl(obj, obj_text) {
                        let name = self.text(attr).to_string();
                        self.m.tl_attrs.push((name, node));
                    } else if obj.kind_name() == "attribute"
                        && field!(obj, "attribute").is_some_and(|m| self.text(m) == "math")
                        && field!(obj, "object").is_some_and(|o| is_tl(o, self.text(o)))
                    {
                        // `tl.math.tanh`: checked as `math.tanh`.
                        self.m.tl_attrs.push((format!("math.{}", self.text(attr)), node));
                    }
                }
            }
            "import_from_statement" => {
                // `from triton.language import tanh` and `from triton.language.math import tanh`:
                // each imported name is checked as `tl.tanh` (`tl.math.tanh`) is.
                let module: String =
                    field!(node, "module_name").map(|m| self.text(m).split_whitespace().collect()).unwrap_or_default();
                let prefix = match module.as_str() {
                    "triton.language" => Some(""),
                    "triton.language.math" => Some("math."),
                    _ => None,
                };
                if let Some(prefix) = prefix {
                    let mut c = node.walk();
                    let names: Vec<Node<'a>> = node.children_by_field_name("name", &mut c).collect();
                    for n in names {
                        let name = if n.kind_name() == "aliased_import" { field!(n, "name") } else { Some(n) };
                        if let Some(name) = name {
                            self.m.tl_attrs.push((format!("{prefix}{}", self.text(name)), name));
                        }
                    }
                }
            }
            _ => {}
        }
        true
    }

    fn comment(&mut self, node: Node<'a>) {
        let text = self.text(node);
        let Some(rest) = text.find("kernel-lsp:").map(|i| text[i + "kernel-lsp:".len()..].trim()) else {
            return;
        };
        if let Some(after) = rest.strip_prefix("ignore") {
            let after = after.trim_start();
            let sup = match after.strip_prefix('[').and_then(|s| s.split(']').next()) {
                Some(list) => Suppression::Codes(
                    list.split(',').map(|c| c.trim().to_string()).filter(|c| !c.is_empty()).collect(),
                ),
                None => Suppression::All,
            };
            self.m.directives.push((node.start_byte(), Directive::Ignore(sup)));
        } else if let Some(after) = rest.strip_prefix("reference") {
            let path = after.trim_start().trim_start_matches('=').trim();
            if !path.is_empty() {
                self.m.directives.push((node.start_byte(), Directive::Reference(path.to_string())));
            }
        }
    }

    fn is_kernel_decorator(&self, d: Node) -> bool {
        let target = if d.kind_name() == "call" { field!(d, "function").unwrap_or(d) } else { d };
        let t = self.text(target);
        // A file that never imports Triton has no Triton kernels.
        if self.m.triton_aliases.is_empty() && self.m.tl_aliases.is_empty() {
            return false;
        }
        // Only Triton's decorators (and Gluon's) make a kernel: `@cute.jit`,
        // `@numba.jit`, `@torch.jit.script` functions are not Triton code, nor
        // a bare `@jit` imported from anywhere but Triton (`from numba import jit`).
        match t.strip_suffix(".jit") {
            Some(owner) => {
                let last = owner.rsplit('.').next().unwrap_or(owner);
                self.m.triton_aliases.iter().any(|a| a == owner)
                    || matches!(last, "triton" | "gluon" | "tl")
                    || owner.ends_with("triton.experimental.gluon")
            }
            None if t == "jit" || t == "triton_jit" => {
                let statements = self.m.tree.named_top_level();
                crate::model::bound_from(&statements, self.m.src, t)
                    .map_or(true, |m| m == "triton" || m.starts_with("triton."))
            }
            None => false,
        }
    }

    fn function(&mut self, def: Node<'a>, decorators: Vec<Node<'a>>, class: Option<&str>, depth: usize) {
        let name_node = field!(def, "name");
        let name = name_node.map(|n| self.text(n).to_string()).unwrap_or_default();
        let name_range = name_node.map(range_of).unwrap_or_else(|| range_of(def));
        let body = field!(def, "body");
        self.index_children_but(def, &[body]);
        let Some(body) = body else { return };
        if decorators.iter().any(|d| self.is_kernel_decorator(*d)) {
            let params = self.kernel_params(def);
            let k = self.m.kernels.len();
            self.m.kernels.push(Kernel::from_header(name, name_range, def, decorators, params, None));
            if !self.stub_kernels {
                self.visit(body, Scope::Kernel(k), &mut Vec::new(), None, depth + 1);
            }
            return;
        }
        let params = self.host_params(def);
        let f = self.m.host_fns.len();
        // The walk reaches a top-level statement at depth 1 (a decorated one's definition too).
        let module_level = depth == 1;
        self.m.host_fns.push(HostFn::from_header(
            name,
            class.map(str::to_string),
            def,
            name_range,
            params,
            module_level,
        ));
        self.visit(body, Scope::Host(f), &mut Vec::new(), None, depth + 1);
    }

    /// A statement that is one kernel's definition, read as a stub from the
    /// header its view kept ([`super::KernelHeader`]): its parameters hold
    /// names, ranges and `constexpr` only (their node is the `def`'s, no
    /// default), and it has no decorators; the kernel rules never read a stub.
    /// `false` if the statement is not a single kernel definition (it is then walked as one).
    pub(super) fn kernel_stub(&mut self, unit: Node<'a>, view: &std::sync::Arc<super::KernelHostView>) -> bool {
        let def = if unit.kind_name() == "decorated_definition" { field!(unit, "definition") } else { Some(unit) };
        let Some(def) = def.filter(|d| d.kind_name() == "function_definition") else { return false };
        let Some(h) = view.header.as_deref() else { return false };
        let start = def.start_byte();
        let at = |lo: u32, hi: u32| TextRange::new(start + lo as usize, start + hi as usize);
        let name_range = at(h.name_range.0, h.name_range.1);
        let name = self.m.src.get(name_range.start..name_range.end).unwrap_or_default();
        if h.params.len() != view.params.len() || name.is_empty() {
            return false;
        }
        let mut params = Vec::with_capacity(h.params.len());
        for (name, &(lo, hi, constexpr)) in view.params.iter().zip(&h.params) {
            let range = at(lo, hi);
            // The name where the header says it is, as the view names it (else the statement is not the one described).
            let Some(here) = self.m.src.get(range.start..range.end).filter(|here| here == name) else { return false };
            params.push(Param { name: here, range, constexpr, default: None, node: def });
        }
        let kernel = Kernel::from_header(name.to_string(), name_range, def, Vec::new(), params, Some(view.clone()));
        self.m.kernels.push(kernel);
        true
    }

    /// A top-level `def` read as a stub ([`super::Stub::Host`]): its header as
    /// [`Self::function`] reads it, and its calls to functions of this file
    /// found again by their byte ranges (without their loops). `false` if a
    /// call is not where the stub says (the statement is not the one described).
    pub(super) fn host_stub(&mut self, def: Node<'a>, stub: &std::sync::Arc<super::HostStub>) -> bool {
        if def.kind_name() != "function_definition" {
            return false;
        }
        // The statement reads as it did: its header is the one kept.
        let start = def.start_byte();
        let at = |(lo, hi): (u32, u32)| TextRange::new(start + lo as usize, start + hi as usize);
        let text = |r: TextRange| self.m.src.get(r.start..r.end).map(str::to_string);
        let name_range = at(stub.name_range);
        let Some(name) = text(name_range) else { return false };
        let Some(params) = stub.params.iter().map(|r| text(at(*r))).collect::<Option<Vec<String>>>() else {
            return false;
        };
        let mut calls = Vec::with_capacity(stub.calls.len());
        for (lo, hi, callee) in stub.calls.iter() {
            let (lo, hi) = (start + *lo as usize, start + *hi as usize);
            match def.descendant_for_byte_range(lo, hi) {
                Some(node) if node.kind_name() == "call" && node.start_byte() == lo && node.end_byte() == hi => {
                    calls.push(HCall { node, callee: callee.clone(), loops: Vec::new() })
                }
                _ => return false,
            }
        }
        let mut f = HostFn::from_header(name, None, def, name_range, params, true);
        f.calls = calls;
        f.stub = Some(stub.clone());
        self.m.host_fns.push(f);
        true
    }

    fn host_params(&self, def: Node<'a>) -> Vec<String> {
        field!(def, "parameters")
            .map(|p| {
                let mut c = p.walk();
                p.named_children(&mut c).filter_map(|n| param_name(n, self.m.src).map(str::to_string)).collect()
            })
            .unwrap_or_default()
    }

    fn kernel_params(&self, def: Node<'a>) -> Vec<Param<'a>> {
        let Some(params) = field!(def, "parameters") else { return Vec::new() };
        let mut c = params.walk();
        params
            .named_children(&mut c)
            .filter_map(|p| {
                let name = param_name(p, self.m.src)?;
                // Field lookups cost a scan of the children: ask only the kinds that have the field.
                let kind = p.kind_name();
                let typed = matches!(kind, "typed_parameter" | "typed_default_parameter");
                let defaulted = matches!(kind, "default_parameter" | "typed_default_parameter");
                let ty = if typed { field!(p, "type").map(|t| self.text(t)).unwrap_or("") } else { "" };
                let name_range = match kind {
                    "identifier" => range_of(p),
                    // A typed parameter has no `name` field: its name is its first named child.
                    "typed_parameter" => p.named_child(0).map(range_of).unwrap_or_else(|| range_of(p)),
                    _ => field!(p, "name").or_else(|| p.named_child(0)).map(range_of).unwrap_or_else(|| range_of(p)),
                };
                Some(Param {
                    name,
                    range: name_range,
                    constexpr: ty.ends_with("constexpr"),
                    default: if defaulted { field!(p, "value") } else { None },
                    node: p,
                })
            })
            .collect()
    }

    fn loop_stmt(&mut self, node: Node<'a>, scope: Scope, loops: &mut Vec<usize>, class: Option<&str>, depth: usize) {
        let Some(body) = field!(node, "body") else {
            self.index_children_but(node, &[]);
            return;
        };
        // The walk enters the body, the iterable or condition, and the `else`.
        let entered = [Some(body), field!(node, "right"), field!(node, "condition"), field!(node, "alternative")];
        self.index_children_but(node, &entered);
        let header_end = self.header_end(node, body);
        let kind = if node.kind_name() == "for_statement" { LoopKind::For } else { LoopKind::While };
        let mut lp = Loop {
            kind,
            node,
            header_range: TextRange::new(node.start_byte(), header_end),
            var: None,
            head: None,
            start: None,
            stop: None,
            step: None,
            reversed: false,
            body,
            parent: loops.last().copied(),
        };
        match kind {
            LoopKind::For => {
                let left = field!(node, "left");
                lp.var = left.filter(|l| l.kind_name() == "identifier").map(|l| self.text(l).to_string());
                lp.head = field!(node, "right");
                if let Some(right) = lp.head {
                    self.range_parts(right, &mut lp);
                }
            }
            LoopKind::While => {
                lp.head = field!(node, "condition");
                if let Some(cond) = lp.head.filter(|c| c.kind_name() == "comparison_operator") {
                    let left = cond.named_child(0);
                    let right = cond.named_child(1);
                    if let Some(l) = left.filter(|l| l.kind_name() == "identifier") {
                        let var = self.text(l).to_string();
                        lp.step = direct_augmented_step(body, &var, self.m.src);
                        lp.var = Some(var);
                        lp.stop = right;
                        let op = cond.child(1).map(|o| self.text(o)).unwrap_or("");
                        lp.reversed = op == ">" || op == ">=";
                    }
                }
            }
        }
        // Header expressions belong to the enclosing loops, but for a `while` in
        // host code: its condition runs every iteration (`while flag.item():` waits
        // for the GPU each time round), so it belongs to the loop itself.
        let condition_each_step = matches!(scope, Scope::Host(_)) && node.kind_name() == "while_statement";
        let condition = field!(node, "condition");
        let before = if condition_each_step { None } else { condition };
        for part in [field!(node, "right"), before].into_iter().flatten() {
            self.visit(part, scope, loops, class, depth + 1);
        }
        let idx = match scope {
            Scope::Host(f) => {
                self.m.host_fns[f].loops.push(lp);
                self.m.host_fns[f].loops.len() - 1
            }
            Scope::Kernel(k) => {
                if let Some(var) = lp.var.clone() {
                    // The loop variable starts at `start`: record it as an assignment for data flow.
                    if let Some(start) = lp.start {
                        self.m.kernels[k].assigns.push(Assign {
                            target: var,
                            value: start,
                            augmented: false,
                            node,
                            loops: loops.clone(),
                        });
                    }
                }
                self.m.kernels[k].loops.push(lp);
                self.m.kernels[k].loops.len() - 1
            }
        };
        loops.push(idx);
        if let Some(condition) = condition.filter(|_| condition_each_step) {
            self.visit(condition, scope, loops, class, depth + 1);
        }
        self.visit(body, scope, loops, class, depth + 1);
        loops.pop();
        if let Some(alt) = field!(node, "alternative") {
            self.visit(alt, scope, loops, class, depth + 1);
        }
    }

    fn header_end(&self, node: Node, body: Node) -> usize {
        // The header ends at the ':' before the body.
        let mut end = body.start_byte();
        let mut c = node.walk();
        for child in node.children(&mut c) {
            if child.kind_name() == ":" {
                end = child.end_byte();
                break;
            }
        }
        end.min(body.start_byte()).max(node.start_byte())
    }

    fn range_parts(&self, iter: Node<'a>, lp: &mut Loop<'a>) {
        let mut call = iter;
        let func_text = |n: Node| field!(n, "function").map(|f| self.text(f)).unwrap_or("");
        if call.kind_name() == "call" && func_text(call) == "reversed" {
            lp.reversed = true;
            match field!(call, "arguments").and_then(|a| a.named_child(0)) {
                Some(inner) => call = inner,
                None => return,
            }
        }
        if call.kind_name() != "call" {
            return;
        }
        let f = func_text(call);
        let is_range = f == "range" || f.ends_with(".range") || f.ends_with(".static_range");
        if !is_range {
            return;
        }
        let Some(args) = field!(call, "arguments") else { return };
        let mut c = args.walk();
        let positional: Vec<Node<'a>> = args
            .named_children(&mut c)
            .filter(|a| a.kind_name() != "keyword_argument" && a.kind_name() != "comment")
            .collect();
        match positional.len() {
            1 => lp.stop = Some(positional[0]),
            2 => {
                lp.start = Some(positional[0]);
                lp.stop = Some(positional[1]);
            }
            n if n >= 3 => {
                lp.start = Some(positional[0]);
                lp.stop = Some(positional[1]);
                lp.step = Some(positional[2]);
                let step = self.text(positional[2]).trim();
                if step.starts_with('-') {
                    lp.reversed = true;
                }
            }
            _ => {}
        }
    }

    fn call(&mut self, node: Node<'a>, scope: Scope, loops: &[usize]) {
        let Some(func) = field!(node, "function") else { return };
        match scope {
            Scope::Kernel(k) => {
                let (args, kwargs) = call_arguments(node, self.m.src);
                let tl_name = match func.kind_name() {
                    "attribute" => {
                        let obj = field!(func, "object").map(|o| self.text(o)).unwrap_or("");
                        let attr = field!(func, "attribute").map(|a| self.text(a)).unwrap_or("");
                        (self.m.is_tl_alias(obj) || obj == "triton.language").then(|| attr.to_string())
                    }
                    _ => None,
                };
                let ftext = self.text(func);
                let callee = ftext.rsplit('.').next().unwrap_or(ftext).to_string();
                self.m.kernels[k].calls.push(KCall { node, tl_name, callee, args, kwargs, loops: loops.to_vec() });
            }
            Scope::Host(f) => {
                if func.kind_name() == "subscript" {
                    let value = field!(func, "value");
                    let grid = field!(func, "subscript");
                    if let (Some(value), Some(grid)) = (value, grid) {
                        if value.kind_name() == "identifier" {
                            let (args, kwargs) = call_arguments(node, self.m.src);
                            self.m.launch_candidates.push(range_of(node));
                            self.pending_launches.push(Launch {
                                kernel: self.text(value).to_string(),
                                node,
                                name_range: range_of(value),
                                grid,
                                args,
                                kwargs,
                                host_fn: f,
                                loops: loops.to_vec(),
                            });
                        }
                    }
                    return;
                }
                let ftext = self.text(func);
                let sync = match ftext {
                    t if t.ends_with("cuda.synchronize") => Some("torch.cuda.synchronize()"),
                    t if t.ends_with(".item") => Some(".item()"),
                    t if t.ends_with(".cpu") => Some(".cpu()"),
                    t if t.ends_with(".tolist") => Some(".tolist()"),
                    t if t.ends_with(".numpy") => Some(".numpy()"),
                    t if t.ends_with(".synchronize") => Some(".synchronize()"),
                    // `.to("cpu")`, `.to(device="cpu")`, `.to(torch.device("cpu"))`: a copy to the host.
                    // (The arguments are read only here: most host calls are neither launches nor copies.)
                    t if t.ends_with(".to") && {
                        let (args, kwargs) = call_arguments(node, self.m.src);
                        args.first()
                            .into_iter()
                            .chain(kwargs.iter().filter(|(k, _)| k == "device").map(|(_, v)| v))
                            .any(|a| {
                                let a: String = self.text(*a).chars().filter(|c| !c.is_whitespace()).collect();
                                matches!(
                                    a.as_str(),
                                    "\"cpu\"" | "'cpu'" | "torch.device(\"cpu\")" | "torch.device('cpu')"
                                )
                            })
                    } =>
                    {
                        Some(".to(\"cpu\")")
                    }
                    _ => None,
                };
                if let Some(what) = sync {
                    self.m.host_fns[f].syncs.push(HostSync { node, what: what.to_string(), loops: loops.to_vec() });
                }
                let callee = match func.kind_name() {
                    "identifier" => Some(ftext.to_string()),
                    "attribute" => {
                        let object = field!(func, "object");
                        let obj = object.map(|o| self.text(o)).unwrap_or("");
                        let attr = field!(func, "attribute").map(|a| self.text(a)).unwrap_or("");
                        if obj == "self" || obj == "cls" {
                            Some(attr.to_string())
                        } else if obj.starts_with("self.") {
                            // A method of an object the instance holds (`self.cell.step(...)`): `.step`.
                            Some(format!(".{attr}"))
                        } else if attr == "apply" && object.is_some_and(|o| o.kind_name() == "identifier") {
                            // `StepFunction.apply(...)` runs the autograd `Function`'s static `forward`.
                            Some(format!("{obj}.apply"))
                        } else {
                            None
                        }
                    }
                    // `Block()(x)`: a module of this file built and called in one expression.
                    "call" => field!(func, "function")
                        .filter(|c| c.kind_name() == "identifier")
                        .map(|c| format!("{}()", self.text(c))),
                    _ => None,
                };
                if let Some(callee) = callee {
                    self.m.host_fns[f].calls.push(HCall { node, callee, loops: loops.to_vec() });
                }
            }
        }
    }

    fn assignment(&mut self, node: Node<'a>, scope: Scope, loops: &[usize]) {
        let augmented = node.kind_name() == "augmented_assignment";
        let (Some(left), Some(value)) = (field!(node, "left"), field!(node, "right")) else {
            return;
        };
        let mut targets: Vec<(String, Node<'a>)> = Vec::new();
        match left.kind_name() {
            "identifier" => targets.push((self.text(left).to_string(), value)),
            "pattern_list" | "tuple_pattern" | "list_pattern" => {
                let mut c = left.walk();
                let names: Vec<Node<'a>> = left.named_children(&mut c).collect();
                // `a, b = 1, 2` pairs up element-wise; `a, b = x.shape` gives each the whole value.
                let mut vc = value.walk();
                let values: Vec<Node<'a>> = match value.kind_name() {
                    "expression_list" | "tuple" | "list" => value.named_children(&mut vc).collect(),
                    _ => Vec::new(),
                };
                for (i, t) in names.iter().enumerate() {
                    if t.kind_name() != "identifier" {
                        continue;
                    }
                    let v = if values.len() == names.len() { values[i] } else { value };
                    targets.push((self.text(*t).to_string(), v));
                }
            }
            _ => {}
        }
        let list = match scope {
            Scope::Host(f) => &mut self.m.host_fns[f].assigns,
            Scope::Kernel(k) => &mut self.m.kernels[k].assigns,
        };
        for (target, value) in targets {
            list.push(Assign { target, value, augmented, node, loops: loops.to_vec() });
        }
    }
}

/// The byte ranges of the parameter names [`Walker`] reads of a host
/// function's `def` (`HostFn::params`), in order.
pub(crate) fn host_param_ranges(def: Node) -> Vec<TextRange> {
    let Some(params) = field!(def, "parameters") else { return Vec::new() };
    let mut c = params.walk();
    params.named_children(&mut c).filter_map(|p| param_name_node(p).map(range_of)).collect()
}

/// A parameter's name, for the kinds of parameter that have one.
fn param_name_node(p: Node) -> Option<Node> {
    let n = match p.kind_name() {
        "identifier" => p,
        "typed_parameter" => p.named_child(0)?,
        "default_parameter" | "typed_default_parameter" => field!(p, "name")?,
        _ => return None,
    };
    (n.kind_name() == "identifier").then_some(n)
}

fn param_name<'a>(p: Node, src: &'a str) -> Option<&'a str> {
    param_name_node(p).map(|n| &src[n.byte_range()])
}

/// The step of `var += STEP` written directly in a loop body.
fn direct_augmented_step<'a>(body: Node<'a>, var: &str, src: &str) -> Option<Node<'a>> {
    let mut c = body.walk();
    for stmt in body.named_children(&mut c) {
        let inner = if stmt.kind_name() == "expression_statement" { stmt.named_child(0) } else { Some(stmt) };
        let Some(a) = inner.filter(|a| a.kind_name() == "augmented_assignment") else { continue };
        let left = field!(a, "left").map(|l| &src[l.byte_range()]);
        let op = field!(a, "operator").map(|o| &src[o.byte_range()]);
        if left == Some(var) && matches!(op, Some("+=") | Some("-=")) {
            return field!(a, "right");
        }
    }
    None
}
