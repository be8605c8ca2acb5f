//! The file model: what a Triton kernel file contains, read off the
//! tree-sitter syntax tree in one walk.
//!
//! Kernels (`@triton.jit` defs, also under `@triton.autotune`/`@triton.heuristics`)
//! with their parameters, loops, `tl.*` calls, assignments and subscripts; host
//! functions (module scope, functions, methods) with their loops, calls,
//! launches (`kernel[grid](...)`) and host syncs; classes; suppression and
//! reference comments. The model holds tree-sitter nodes borrowed from the
//! tree, so rules can look closer where they need to. Questions that several
//! rules ask (data flow inside a kernel, whether a loop is a time loop, how
//! many launches a call makes) are answered here, once.

use std::cell::{Cell, OnceCell};
use std::collections::{HashMap, HashSet};

use tree_sitter::{Node, Tree};

use super::KernelSummary;
use crate::text::TextRange;

/// Deeper syntax than this is not descended into: it only occurs in generated
/// or hostile input, and the walk must not overflow the stack.
const MAX_DEPTH: usize = 200;

pub fn range_of(node: Node) -> TextRange {
    TextRange::new(node.start_byte(), node.end_byte())
}

#[derive(Debug, Clone)]
pub struct ClassInfo<'a> {
    pub name: String,
    pub name_range: TextRange,
    pub node: Node<'a>,
}

#[derive(Debug, Clone)]
pub struct Param<'a> {
    pub name: String,
    pub range: TextRange,
    pub constexpr: bool,
    pub default: Option<Node<'a>>,
    /// The whole parameter node (name, annotation and default).
    pub node: Node<'a>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopKind {
    For,
    While,
}

/// A `for` or `while` loop, in a kernel or in host code.
#[derive(Debug, Clone)]
pub struct Loop<'a> {
    pub kind: LoopKind,
    pub node: Node<'a>,
    /// From the keyword through the end of the header (`for t in range(T)`).
    pub header_range: TextRange,
    /// The loop variable: the `for` target, or the variable compared in a `while` condition.
    pub var: Option<String>,
    /// `for`: the iterable; `while`: the condition.
    pub head: Option<Node<'a>>,
    pub start: Option<Node<'a>>,
    pub stop: Option<Node<'a>>,
    pub step: Option<Node<'a>>,
    /// `reversed(range(...))` or a negative step.
    pub reversed: bool,
    pub body: Node<'a>,
    /// Enclosing loop in the same function.
    pub parent: Option<usize>,
}

impl<'a> Loop<'a> {
    pub fn contains(&self, node: Node) -> bool {
        range_of(self.body).contains_range(range_of(node))
    }
}

/// A call inside a kernel.
#[derive(Debug, Clone)]
pub struct KCall<'a> {
    pub node: Node<'a>,
    /// `X` when the call is `tl.X(...)` (whatever `triton.language` is imported as).
    pub tl_name: Option<String>,
    /// The last name of the callee, e.g. `load` or `grid_barrier`.
    pub callee: String,
    pub args: Vec<Node<'a>>,
    pub kwargs: Vec<(String, Node<'a>)>,
    /// Enclosing loops, outermost first.
    pub loops: Vec<usize>,
}

impl<'a> KCall<'a> {
    pub fn is_tl(&self, name: &str) -> bool {
        self.tl_name.as_deref() == Some(name)
    }
    pub fn arg(&self, index: usize, keyword: &str) -> Option<Node<'a>> {
        self.args.get(index).copied().or_else(|| self.kwargs.iter().find(|(k, _)| k == keyword).map(|(_, v)| *v))
    }
}

/// `name = value`, `a, b = value` (each target), or `name op= value`.
#[derive(Debug, Clone)]
pub struct Assign<'a> {
    pub target: String,
    pub value: Node<'a>,
    pub augmented: bool,
    pub node: Node<'a>,
    pub loops: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct Kernel<'a> {
    pub name: String,
    pub name_range: TextRange,
    /// The `function_definition` node.
    pub node: Node<'a>,
    /// `def` keyword through the name.
    pub header_range: TextRange,
    /// Decorator expressions, e.g. `triton.autotune(configs=[...], key=[...])`.
    pub decorators: Vec<Node<'a>>,
    pub params: Vec<Param<'a>>,
    pub loops: Vec<Loop<'a>>,
    pub calls: Vec<KCall<'a>>,
    pub assigns: Vec<Assign<'a>>,
    /// `value[index]` expressions inside the kernel body.
    pub subscripts: Vec<(Node<'a>, Vec<usize>)>,
    /// Identifier pairs multiplied together (`n * BLOCK_N`), for tile-loop recognition.
    pub products: Vec<(String, String)>,
}

/// A call in host code: to a function of this file (`helper(...)`, `self.helper(...)`).
#[derive(Debug, Clone)]
pub struct HCall<'a> {
    pub node: Node<'a>,
    pub callee: String,
    pub loops: Vec<usize>,
}

/// `.item()`, `.cpu()`, `torch.cuda.synchronize()` and friends.
#[derive(Debug, Clone)]
pub struct HostSync<'a> {
    pub node: Node<'a>,
    pub what: String,
    pub loops: Vec<usize>,
}

/// Module scope (index 0), a function or a method.
#[derive(Debug, Clone)]
pub struct HostFn<'a> {
    pub name: String,
    pub class: Option<String>,
    pub node: Node<'a>,
    pub name_range: TextRange,
    pub params: Vec<String>,
    pub loops: Vec<Loop<'a>>,
    pub calls: Vec<HCall<'a>>,
    pub launches: Vec<usize>,
    pub assigns: Vec<Assign<'a>>,
    pub syncs: Vec<HostSync<'a>>,
}

/// `kernel[grid](args..., KW=...)`.
#[derive(Debug, Clone)]
pub struct Launch<'a> {
    pub kernel: String,
    pub node: Node<'a>,
    pub name_range: TextRange,
    pub grid: Node<'a>,
    pub args: Vec<Node<'a>>,
    pub kwargs: Vec<(String, Node<'a>)>,
    pub host_fn: usize,
    pub loops: Vec<usize>,
}

impl<'a> Launch<'a> {
    pub fn kwarg(&self, name: &str) -> Option<Node<'a>> {
        self.kwargs.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }
}

/// `# kernel-lsp: ignore` / `# kernel-lsp: ignore[KL001, ...]`.
#[derive(Debug, Clone, PartialEq)]
pub enum Suppression {
    All,
    Codes(Vec<String>),
}

impl Suppression {
    pub fn covers(&self, code: &str) -> bool {
        match self {
            Suppression::All => true,
            Suppression::Codes(codes) => codes.iter().any(|c| c.eq_ignore_ascii_case(code)),
        }
    }
}

/// A `# kernel-lsp: ...` comment.
#[derive(Debug, Clone, PartialEq)]
pub enum Directive {
    /// Suppresses diagnostics that start on the comment's line.
    Ignore(Suppression),
    /// `# kernel-lsp: reference = PATH`.
    Reference(String),
}

pub struct FileModel<'a> {
    pub src: &'a str,
    pub tree: &'a Tree,
    /// Names bound to `triton.language` (usually `tl`).
    pub tl_aliases: Vec<String>,
    /// Names bound to `triton`.
    pub triton_aliases: Vec<String>,
    pub kernels: Vec<Kernel<'a>>,
    /// Index 0 is the module scope.
    pub host_fns: Vec<HostFn<'a>>,
    pub launches: Vec<Launch<'a>>,
    pub classes: Vec<ClassInfo<'a>>,
    /// Every `tl.X` attribute access: (X, the attribute node).
    pub tl_attrs: Vec<(String, Node<'a>)>,
    /// Every `name[grid](...)` call in host code, whether or not `name` looks like a kernel.
    pub launch_candidates: Vec<TextRange>,
    /// `# kernel-lsp:` comments in document order, by the comment's start byte.
    pub directives: Vec<(usize, Directive)>,
    /// The last `# kernel-lsp: reference = PATH`.
    pub reference: Option<String>,
    pub has_syntax_errors: bool,
    /// When set, the kernel rules report only on `kernels[lo..hi]` (see `checked_kernels`).
    focus: Cell<Option<(usize, usize)>>,
    /// Units of work done answering questions that follow names (assignments
    /// followed, callee candidates weighed, call-graph nodes visited): the
    /// scaling tests bound it, because a wall clock in a unit test proves nothing.
    steps: Cell<usize>,
    /// Host functions by name, each list in document order (built on first use).
    fn_index: OnceCell<HashMap<String, [Vec<usize>; 2]>>,
}

impl<'a> FileModel<'a> {
    pub fn build(src: &'a str, tree: &'a Tree) -> Self {
        Self::build_from(src, tree, None, None)
    }

    /// The model of only some top-level statements of the file (children of
    /// the root, in document order): what the incremental analysis re-reads
    /// after an edit. Imports are still read from the whole module.
    /// `aliases` are what [`imports`] gives for the whole module.
    pub fn build_partial(
        src: &'a str,
        tree: &'a Tree,
        units: &[Node<'a>],
        aliases: &(Vec<String>, Vec<String>),
    ) -> Self {
        Self::build_from(src, tree, Some(units), Some(aliases))
    }

    fn build_from(
        src: &'a str,
        tree: &'a Tree,
        units: Option<&[Node<'a>]>,
        aliases: Option<&(Vec<String>, Vec<String>)>,
    ) -> Self {
        let root = tree.root_node();
        let (tl_aliases, triton_aliases) = match aliases {
            Some((tl, triton)) => (tl.clone(), triton.clone()),
            None => imports(root, src),
        };
        let mut model = FileModel {
            src,
            tree,
            tl_aliases,
            triton_aliases,
            kernels: Vec::new(),
            host_fns: Vec::new(),
            launches: Vec::new(),
            classes: Vec::new(),
            tl_attrs: Vec::new(),
            launch_candidates: Vec::new(),
            directives: Vec::new(),
            reference: None,
            has_syntax_errors: root.has_error(),
            focus: Cell::new(None),
            steps: Cell::new(0),
            fn_index: OnceCell::new(),
        };
        model.host_fns.push(HostFn {
            name: "<module>".to_string(),
            class: None,
            node: root,
            name_range: TextRange::new(0, 0),
            params: Vec::new(),
            loops: Vec::new(),
            calls: Vec::new(),
            launches: Vec::new(),
            assigns: Vec::new(),
            syncs: Vec::new(),
        });
        let mut walker = Walker { m: &mut model, pending_launches: Vec::new() };
        match units {
            // Each top-level statement is walked exactly as the walk of the root reaches it (depth 1).
            Some(units) => {
                for unit in units {
                    walker.visit(*unit, Scope::Host(0), &mut Vec::new(), None, 1);
                }
            }
            None => walker.visit(root, Scope::Host(0), &mut Vec::new(), None, 0),
        }
        let pending = std::mem::take(&mut walker.pending_launches);
        model.resolve_launches(pending);
        model.reference = model.directives.iter().rev().find_map(|(_, d)| match d {
            Directive::Reference(path) => Some(path.clone()),
            Directive::Ignore(_) => None,
        });
        model
    }

    /// The kernels the kernel rules report on: all of them, or the focused range.
    pub fn checked_kernels(&self) -> &[Kernel<'a>] {
        match self.focus.get() {
            Some((lo, hi)) => &self.kernels[lo.min(self.kernels.len())..hi.min(self.kernels.len())],
            None => &self.kernels,
        }
    }

    /// Makes the kernel rules report only on `kernels[lo..hi]` (`None`: on all).
    pub fn set_focus(&self, focus: Option<(usize, usize)>) {
        self.focus.set(focus);
    }

    /// Work done so far by the name-following questions (see the field).
    pub fn steps(&self) -> usize {
        self.steps.get()
    }

    fn step(&self, n: usize) {
        self.steps.set(self.steps.get().saturating_add(n));
    }

    pub fn text(&self, node: Node) -> &'a str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    pub fn kernel(&self, name: &str) -> Option<&Kernel<'a>> {
        self.kernels.iter().find(|k| k.name == name)
    }

    pub fn is_tl_alias(&self, name: &str) -> bool {
        self.tl_aliases.iter().any(|a| a == name)
    }

    fn resolve_launches(&mut self, pending: Vec<Launch<'a>>) {
        let known: HashSet<String> = self.kernels.iter().map(|k| k.name.clone()).collect();
        for launch in pending {
            let looks_like_kernel =
                known.contains(&launch.kernel) || launch.kernel.to_ascii_lowercase().contains("kernel");
            if !looks_like_kernel {
                continue;
            }
            let idx = self.launches.len();
            self.host_fns[launch.host_fn].launches.push(idx);
            self.launches.push(launch);
        }
    }

    /// The host function a call reaches: the binding of its name visible at the
    /// call, as Python resolves it. Functions defined inside the caller (or a
    /// function enclosing it) come first, then methods of the caller's class,
    /// then the rest; among those of the nearest tier, the last definition
    /// before the call, else the first after it (a module-level name bound
    /// later in the file). One callee per call keeps a file that repeats the
    /// same definitions (a concatenated or generated module) linear: each copy
    /// relates only to its own definitions.
    pub fn callees(&self, caller: usize, call: &HCall) -> Vec<usize> {
        let class = self.host_fns[caller].class.as_deref();
        let at = call.node.start_byte();
        let index = self.fn_index.get_or_init(|| {
            // [every definition, module-level definitions], each in document order.
            let mut map: HashMap<String, [Vec<usize>; 2]> = HashMap::new();
            for i in 1..self.host_fns.len() {
                let lists = map.entry(self.host_fns[i].name.clone()).or_default();
                lists[0].push(i);
                if self.is_module_level(i) {
                    lists[1].push(i);
                }
            }
            for lists in map.values_mut() {
                for list in lists.iter_mut() {
                    list.sort_by_key(|&i| self.host_fns[i].node.start_byte());
                }
            }
            map
        });
        let Some([candidates, module_level]) = index.get(&call.callee) else { return Vec::new() };
        let start_of = |i: usize| self.host_fns[i].node.start_byte();
        // Definitions inside the top-level statement that holds the call: only they can be local.
        let mut top = call.node;
        while let Some(p) = top.parent() {
            if p.kind() == "module" {
                break;
            }
            top = p;
        }
        let lo = candidates.partition_point(|&i| start_of(i) < top.start_byte());
        let hi = candidates.partition_point(|&i| start_of(i) < top.end_byte());
        let local = &candidates[lo..hi];
        self.step(local.len() + 1);
        // The nearest enclosing definition of `kind` around a function's def, and whether it holds the call.
        let enclosing_holds_call = |i: usize, kind: &str| {
            let mut n = self.host_fns[i].node.parent();
            while let Some(p) = n {
                if p.kind() == kind {
                    return p.start_byte() <= at && at < p.end_byte();
                }
                if p.kind() == "function_definition" || p.kind() == "class_definition" {
                    return false;
                }
                n = p.parent();
            }
            false
        };
        let nearest = |in_tier: &[usize]| -> Option<usize> {
            in_tier.iter().copied().filter(|&i| start_of(i) < at).last().or_else(|| in_tier.first().copied())
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
        candidates.clone()
    }

    fn is_module_level(&self, i: usize) -> bool {
        match self.host_fns[i].node.parent() {
            None => true,
            Some(p) if p.kind() == "decorated_definition" => p.parent().is_none_or(|m| m.kind() == "module"),
            Some(p) => p.kind() == "module",
        }
    }

    /// Launch sites a call to host function `f` reaches, transitively, with the
    /// number of launches one call makes (launches inside loops of the callee count once).
    pub fn launches_reached(&self, f: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        self.collect_launches(f, &mut seen, &mut out);
        out
    }

    fn collect_launches(&self, f: usize, seen: &mut HashSet<usize>, out: &mut Vec<usize>) {
        if !seen.insert(f) {
            return;
        }
        self.step(1);
        out.extend(self.host_fns[f].launches.iter().copied());
        for call in &self.host_fns[f].calls {
            for callee in self.callees(f, call) {
                self.collect_launches(callee, seen, out);
            }
        }
        seen.remove(&f);
    }

    /// Launch sites reached from inside the body of loop `l` of host function `f`:
    /// direct launches and launches through helper calls. Each entry is
    /// (launch index, the call site that leads there if indirect).
    pub fn launches_in_loop(&self, f: usize, l: usize) -> Vec<(usize, Option<Node<'a>>)> {
        let func = &self.host_fns[f];
        let mut out: Vec<(usize, Option<Node<'a>>)> =
            func.launches.iter().filter(|&&i| self.launches[i].loops.contains(&l)).map(|&i| (i, None)).collect();
        for call in func.calls.iter().filter(|c| c.loops.contains(&l)) {
            for callee in self.callees(f, call) {
                for li in self.launches_reached(callee) {
                    out.push((li, Some(call.node)));
                }
            }
        }
        out
    }

    /// Whether a host loop walks time steps (a sequence dimension) rather than
    /// layers or a fixed count: its bound comes from a tensor's shape, or its
    /// variable indexes a tensor that is not a module attribute. A loop over
    /// `self.*` (layers, parameters) is never a time loop.
    pub fn is_time_loop(&self, f: usize, l: usize) -> bool {
        let func = &self.host_fns[f];
        let lp = &func.loops[l];
        let bound = match lp.kind {
            LoopKind::For => lp.stop.or(lp.head),
            LoopKind::While => lp.stop,
        };
        if let Some(b) = bound {
            if self.rooted_in_self(f, b, 0) {
                return false;
            }
            if self.shape_derived(f, b) {
                return true;
            }
            // Iterating a tensor directly: `for x_t in x` / `x.unbind(0)`.
            if lp.kind == LoopKind::For && lp.start.is_none() && lp.stop.is_none() {
                let t = self.text(b);
                if t.contains(".unbind(") || t.contains(".split(") || t.contains(".chunk(") {
                    return true;
                }
            }
        }
        match &lp.var {
            Some(var) => self.var_indexes_tensor(lp.body, var),
            None => false,
        }
    }

    fn rooted_in_self(&self, f: usize, node: Node, depth: usize) -> bool {
        if depth > 8 {
            return false;
        }
        let t = self.text(node).trim();
        if t.starts_with("self.")
            || t.starts_with("len(self.")
            || t.starts_with("enumerate(self.")
            || t.starts_with("zip(self.")
            || counts_layers(t)
        {
            return true;
        }
        if node.kind() == "identifier" {
            if let Some(a) = self.host_fns[f].assigns.iter().find(|a| a.target == t) {
                return self.rooted_in_self(f, a.value, depth + 1);
            }
        }
        false
    }

    /// Whether a host expression comes from a tensor's shape, following the
    /// function's assignments. Each name is looked at once (a worklist with a
    /// seen set), so the work is linear in the assignments however they chain:
    /// `a, b, c = [f(v) for v in (a, b, c)]` once made this exponential.
    fn shape_derived(&self, f: usize, node: Node) -> bool {
        let mut seen: HashSet<String> = HashSet::new();
        let mut seen_values: HashSet<usize> = HashSet::new();
        let mut work = vec![node];
        while let Some(n) = work.pop() {
            if !seen_values.insert(n.id()) {
                continue;
            }
            self.step(1);
            let t = self.text(n);
            if t.contains(".size(") || t.contains(".shape") || t.contains("len(") && !t.contains("len(self.") {
                return true;
            }
            let mut idents = Vec::new();
            collect_identifiers(n, self.src, &mut idents);
            for id in idents {
                if !seen.insert(id.clone()) {
                    continue;
                }
                work.extend(self.host_fns[f].assigns.iter().filter(|a| a.target == id).map(|a| a.value));
            }
        }
        false
    }

    fn var_indexes_tensor(&self, body: Node, var: &str) -> bool {
        let mut found = false;
        visit_nodes(body, &mut |n| {
            if found || n.kind() != "subscript" {
                return;
            }
            let (Some(value), Some(index)) = (field!(n, "value"), field!(n, "subscript")) else {
                return;
            };
            let vt = self.text(value);
            if vt.starts_with("self.") {
                return;
            }
            let mut ids = Vec::new();
            collect_identifiers(index, self.src, &mut ids);
            if ids.iter().any(|i| i == var) {
                found = true;
            }
        });
        found
    }

    /// A short name for what a host loop counts: `seq_len`, `num_layers`, `x.size(0)`.
    pub fn loop_bound_text(&self, f: usize, l: usize) -> String {
        let lp = &self.host_fns[f].loops[l];
        let node = if lp.reversed && lp.step.is_some() { lp.start } else { lp.stop }.or(lp.head);
        let Some(mut node) = node else { return "?".to_string() };
        // `enumerate(xs)` / `zip(xs, ...)` count as many steps as `xs`.
        if node.kind() == "call" {
            let func = field!(node, "function").map(|f| self.text(f)).unwrap_or("");
            if matches!(func, "enumerate" | "zip") {
                if let Some(first) = field!(node, "arguments").and_then(|a| a.named_child(0)) {
                    node = first;
                }
            }
        }
        if matches!(node.kind(), "tuple" | "list") {
            return node.named_child_count().to_string();
        }
        let mut t = self.text(node).trim().to_string();
        // `seq_len - 1` in a reversed range counts seq_len steps.
        if lp.reversed {
            if let Some(stripped) = t.strip_suffix("- 1").or_else(|| t.strip_suffix("-1")) {
                t = stripped.trim().to_string();
            }
        }
        for prefix in ["self.", "len(self."] {
            if let Some(s) = t.strip_prefix(prefix) {
                t = s.trim_end_matches(')').to_string();
            }
        }
        // `range(0, T, 512)` takes T/512 steps, not T.
        if let (false, Some(step)) = (lp.reversed, lp.step) {
            let step = self.text(step).trim();
            if step != "1" {
                let wrapped = if t.contains(|c: char| " +-*/".contains(c)) { format!("({t})") } else { t };
                return format!("{wrapped}/{step}");
            }
        }
        t
    }

    pub fn kernel_summaries(&self) -> Vec<KernelSummary> {
        let estimates = crate::rules::kl001::launch_estimates(self);
        self.kernels
            .iter()
            .map(|k| {
                let sites: Vec<&Launch> = self.launches.iter().filter(|l| l.kernel == k.name).collect();
                let estimate = estimates.get(&k.name).cloned();
                let time_loops = k.time_loops(self);
                let has_time_loop = !time_loops.is_empty();
                // Persistent: a state loop inside the kernel (a recurrence, not a
                // flash-attention key loop) that no Python time loop relaunches,
                // or a grid sized to the GPU whose programs stride over the tiles.
                let recurrent = time_loops.iter().any(|&t| k.is_recurrence(t, self));
                let grid_stride = (0..k.loops.len()).any(|l| k.is_grid_stride(l, self.src));
                KernelSummary {
                    name: k.name.clone(),
                    range: k.header_range,
                    persistent: (recurrent && estimate.is_none()) || grid_stride,
                    has_time_loop,
                    launch_sites: sites.len(),
                    launches_per_forward: estimate,
                }
            })
            .collect()
    }

    /// Integer value of a host expression where it is written as a literal,
    /// a constant assigned in the same function or at module level, or
    /// simple arithmetic of those.
    pub fn eval_int(&self, f: usize, node: Node, depth: usize) -> Option<i64> {
        if depth > 8 {
            return None;
        }
        let t = self.text(node).trim();
        match node.kind() {
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
}

impl<'a> FileModel<'a> {
    /// The integer literal a host expression stands for: the literal itself,
    /// or the literal a constant was assigned once (where an edit must go).
    pub fn int_literal_node(&self, f: usize, node: Node<'a>) -> Option<Node<'a>> {
        match node.kind() {
            "integer" => Some(node),
            "identifier" => {
                let name = self.text(node);
                for scope in [f, 0] {
                    let assigns: Vec<&Assign<'a>> =
                        self.host_fns[scope].assigns.iter().filter(|a| a.target == name).collect();
                    match assigns.as_slice() {
                        [one] if !one.augmented && one.value.kind() == "integer" => return Some(one.value),
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
/// (`tl` and `triton` when there are none).
pub fn imports(root: Node, src: &str) -> (Vec<String>, Vec<String>) {
    let mut cursor = root.walk();
    let statements: Vec<Node> = root.children(&mut cursor).collect();
    imports_of(&statements, src)
}

/// [`imports`] from the module's top-level statements.
pub fn imports_of(statements: &[Node], src: &str) -> (Vec<String>, Vec<String>) {
    let text = |n: Node| src.get(n.byte_range()).unwrap_or("");
    let mut tl_aliases = Vec::new();
    let mut triton_aliases = Vec::new();
    for &stmt in statements {
        match stmt.kind() {
            "import_statement" => {
                let mut c = stmt.walk();
                for child in stmt.named_children(&mut c) {
                    match child.kind() {
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
                    let (orig, alias) = match name.kind() {
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

pub fn parse_int(t: &str) -> Option<i64> {
    let t = t.replace('_', "");
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return i64::from_str_radix(h, 16).ok();
    }
    t.parse().ok()
}

/// Calls `f` on `node` and every descendant, without recursion.
pub fn visit_nodes<'t>(node: Node<'t>, f: &mut impl FnMut(Node<'t>)) {
    let mut cursor = node.walk();
    let mut depth = 0usize;
    loop {
        f(cursor.node());
        if depth < MAX_DEPTH * 4 && cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if depth == 0 {
                return;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            cursor.goto_parent();
            depth -= 1;
        }
    }
}

/// `rnn.num_layers`, `gru.num_directions`: a plain attribute that counts the
/// layers or directions of a module passed in, a configuration value like
/// `self.num_layers`, never a number of time steps.
fn counts_layers(t: &str) -> bool {
    let Some((base, attr)) = t.rsplit_once('.') else { return false };
    let plain = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    let attr = attr.to_ascii_lowercase();
    plain(base) && plain(&attr) && (attr.contains("layer") || attr.contains("direction"))
}

/// Identifiers an expression reads. `tl.program_id(a)` reads the pseudo
/// identifier `@pid<a>` and `tl.num_programs(a)` reads `@nprog<a>`, so that
/// data flow from grid axes can be followed like any variable. Attribute
/// names and keyword names are not reads.
pub fn collect_identifiers(node: Node, src: &str, out: &mut Vec<String>) {
    let mut stack = vec![(node, 0usize)];
    while let Some((n, depth)) = stack.pop() {
        if depth > MAX_DEPTH * 4 {
            continue;
        }
        match n.kind() {
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
                    if f.kind() == "attribute" {
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
            _ => {
                let mut c = n.walk();
                for child in n.named_children(&mut c) {
                    stack.push((child, depth + 1));
                }
            }
        }
    }
}

/// Numeric ids of the node kinds the walk acts on.
struct Kinds {
    interesting: Vec<u16>,
}

fn kinds() -> &'static Kinds {
    static KINDS: std::sync::OnceLock<Kinds> = std::sync::OnceLock::new();
    KINDS.get_or_init(|| {
        let language: tree_sitter::Language = tree_sitter_python::LANGUAGE.into();
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
        ];
        Kinds { interesting: names.iter().map(|n| language.id_for_node_kind(n, true)).filter(|id| *id != 0).collect() }
    })
}

#[derive(Clone, Copy)]
enum Scope {
    Host(usize),
    Kernel(usize),
}

struct Walker<'m, 'a> {
    m: &'m mut FileModel<'a>,
    pending_launches: Vec<Launch<'a>>,
}

impl<'m, 'a> Walker<'m, 'a> {
    fn text(&self, n: Node) -> &'a str {
        self.m.text(n)
    }

    /// Visits `root` and everything below it with one tree cursor.
    fn visit(&mut self, root: Node<'a>, scope: Scope, loops: &mut Vec<usize>, class: Option<&str>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let kinds = kinds();
        let mut cursor = root.walk();
        let mut level = 0usize;
        loop {
            let node = cursor.node();
            // Most nodes are none of the kinds `enter` acts on: compare numeric kind ids, not strings.
            let descend =
                !kinds.interesting.contains(&node.kind_id()) || self.enter(node, scope, loops, class, depth + level);
            if descend && depth + level < MAX_DEPTH && cursor.goto_first_child() {
                level += 1;
                continue;
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
        match node.kind() {
            "comment" => {
                self.comment(node);
            }
            "decorated_definition" => {
                if let Some(def) = field!(node, "definition") {
                    let mut c = node.walk();
                    let decorators: Vec<Node<'a>> = node
                        .named_children(&mut c)
                        .filter(|n| n.kind() == "decorator")
                        .filter_map(|d| d.named_child(0))
                        .collect();
                    for d in &decorators {
                        self.visit(*d, scope, loops, class, depth + 1);
                    }
                    if def.kind() == "function_definition" {
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
                    if obj.kind() == "identifier" && self.m.is_tl_alias(obj_text) {
                        let name = self.text(attr).to_string();
                        self.m.tl_attrs.push((name, node));
                    } else if obj_text == "triton.language" {
                        let name = self.text(attr).to_string();
                        self.m.tl_attrs.push((name, node));
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
        let target = if d.kind() == "call" { field!(d, "function").unwrap_or(d) } else { d };
        let t = self.text(target);
        // Only Triton's decorators (and Gluon's) make a kernel: `@cute.jit`,
        // `@numba.jit`, `@torch.jit.script` functions are not Triton code.
        match t.strip_suffix(".jit") {
            Some(owner) => {
                let last = owner.rsplit('.').next().unwrap_or(owner);
                self.m.triton_aliases.iter().any(|a| a == owner)
                    || matches!(last, "triton" | "gluon" | "tl")
                    || owner.ends_with("triton.experimental.gluon")
            }
            None => t == "jit" || t == "triton_jit",
        }
    }

    fn function(&mut self, def: Node<'a>, decorators: Vec<Node<'a>>, class: Option<&str>, depth: usize) {
        let name_node = field!(def, "name");
        let name = name_node.map(|n| self.text(n).to_string()).unwrap_or_default();
        let name_range = name_node.map(range_of).unwrap_or_else(|| range_of(def));
        let Some(body) = field!(def, "body") else { return };
        if decorators.iter().any(|d| self.is_kernel_decorator(*d)) {
            let params = self.kernel_params(def);
            let k = self.m.kernels.len();
            self.m.kernels.push(Kernel {
                name,
                name_range,
                node: def,
                header_range: TextRange::new(def.start_byte(), name_range.end),
                decorators,
                params,
                loops: Vec::new(),
                calls: Vec::new(),
                assigns: Vec::new(),
                subscripts: Vec::new(),
                products: Vec::new(),
            });
            self.visit(body, Scope::Kernel(k), &mut Vec::new(), None, depth + 1);
            return;
        }
        let params = field!(def, "parameters")
            .map(|p| {
                let mut c = p.walk();
                p.named_children(&mut c).filter_map(|n| param_name(n, self.m.src)).collect()
            })
            .unwrap_or_default();
        let f = self.m.host_fns.len();
        self.m.host_fns.push(HostFn {
            name,
            class: class.map(str::to_string),
            node: def,
            name_range,
            params,
            loops: Vec::new(),
            calls: Vec::new(),
            launches: Vec::new(),
            assigns: Vec::new(),
            syncs: Vec::new(),
        });
        self.visit(body, Scope::Host(f), &mut Vec::new(), None, depth + 1);
    }

    fn kernel_params(&self, def: Node<'a>) -> Vec<Param<'a>> {
        let Some(params) = field!(def, "parameters") else { return Vec::new() };
        let mut c = params.walk();
        params
            .named_children(&mut c)
            .filter_map(|p| {
                let name = param_name(p, self.m.src)?;
                let ty = field!(p, "type").map(|t| self.text(t)).unwrap_or("");
                let name_range = match p.kind() {
                    "identifier" => range_of(p),
                    _ => field!(p, "name").or_else(|| p.named_child(0)).map(range_of).unwrap_or_else(|| range_of(p)),
                };
                Some(Param {
                    name,
                    range: name_range,
                    constexpr: ty.ends_with("constexpr"),
                    default: field!(p, "value"),
                    node: p,
                })
            })
            .collect()
    }

    fn loop_stmt(&mut self, node: Node<'a>, scope: Scope, loops: &mut Vec<usize>, class: Option<&str>, depth: usize) {
        let Some(body) = field!(node, "body") else { return };
        let header_end = self.header_end(node, body);
        let kind = if node.kind() == "for_statement" { LoopKind::For } else { LoopKind::While };
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
                lp.var = left.filter(|l| l.kind() == "identifier").map(|l| self.text(l).to_string());
                lp.head = field!(node, "right");
                if let Some(right) = lp.head {
                    self.range_parts(right, &mut lp);
                }
            }
            LoopKind::While => {
                lp.head = field!(node, "condition");
                if let Some(cond) = lp.head.filter(|c| c.kind() == "comparison_operator") {
                    let left = cond.named_child(0);
                    let right = cond.named_child(1);
                    if let Some(l) = left.filter(|l| l.kind() == "identifier") {
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
        // Header expressions belong to the enclosing loops.
        for part in [field!(node, "right"), field!(node, "condition")].into_iter().flatten() {
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
            if child.kind() == ":" {
                end = child.end_byte();
                break;
            }
        }
        end.min(body.start_byte()).max(node.start_byte())
    }

    fn range_parts(&self, iter: Node<'a>, lp: &mut Loop<'a>) {
        let mut call = iter;
        let func_text = |n: Node| field!(n, "function").map(|f| self.text(f)).unwrap_or("");
        if call.kind() == "call" && func_text(call) == "reversed" {
            lp.reversed = true;
            match field!(call, "arguments").and_then(|a| a.named_child(0)) {
                Some(inner) => call = inner,
                None => return,
            }
        }
        if call.kind() != "call" {
            return;
        }
        let f = func_text(call);
        let is_range = f == "range" || f.ends_with(".range") || f.ends_with(".static_range");
        if !is_range {
            return;
        }
        let Some(args) = field!(call, "arguments") else { return };
        let mut c = args.walk();
        let positional: Vec<Node<'a>> =
            args.named_children(&mut c).filter(|a| a.kind() != "keyword_argument" && a.kind() != "comment").collect();
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
        let (args, kwargs) = call_arguments(node, self.m.src);
        match scope {
            Scope::Kernel(k) => {
                let tl_name = match func.kind() {
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
                if func.kind() == "subscript" {
                    let value = field!(func, "value");
                    let grid = field!(func, "subscript");
                    if let (Some(value), Some(grid)) = (value, grid) {
                        if value.kind() == "identifier" {
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
                    _ => None,
                };
                if let Some(what) = sync {
                    self.m.host_fns[f].syncs.push(HostSync { node, what: what.to_string(), loops: loops.to_vec() });
                }
                let callee = match func.kind() {
                    "identifier" => Some(ftext.to_string()),
                    "attribute" => {
                        let obj = field!(func, "object").map(|o| self.text(o)).unwrap_or("");
                        let attr = field!(func, "attribute").map(|a| self.text(a)).unwrap_or("");
                        (obj == "self" || obj == "cls").then(|| attr.to_string())
                    }
                    _ => None,
                };
                if let Some(callee) = callee {
                    self.m.host_fns[f].calls.push(HCall { node, callee, loops: loops.to_vec() });
                }
            }
        }
    }

    fn assignment(&mut self, node: Node<'a>, scope: Scope, loops: &[usize]) {
        let augmented = node.kind() == "augmented_assignment";
        let (Some(left), Some(value)) = (field!(node, "left"), field!(node, "right")) else {
            return;
        };
        let mut targets: Vec<(String, Node<'a>)> = Vec::new();
        match left.kind() {
            "identifier" => targets.push((self.text(left).to_string(), value)),
            "pattern_list" | "tuple_pattern" | "list_pattern" => {
                let mut c = left.walk();
                let names: Vec<Node<'a>> = left.named_children(&mut c).collect();
                // `a, b = 1, 2` pairs up element-wise; `a, b = x.shape` gives each the whole value.
                let mut vc = value.walk();
                let values: Vec<Node<'a>> = match value.kind() {
                    "expression_list" | "tuple" | "list" => value.named_children(&mut vc).collect(),
                    _ => Vec::new(),
                };
                for (i, t) in names.iter().enumerate() {
                    if t.kind() != "identifier" {
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

fn param_name(p: Node, src: &str) -> Option<String> {
    let n = match p.kind() {
        "identifier" => p,
        "typed_parameter" => p.named_child(0)?,
        "default_parameter" | "typed_default_parameter" => field!(p, "name")?,
        _ => return None,
    };
    (n.kind() == "identifier").then(|| src[n.byte_range()].to_string())
}

/// Positional arguments and keyword arguments of a call.
pub fn call_arguments<'a>(call: Node<'a>, src: &str) -> (Vec<Node<'a>>, Vec<(String, Node<'a>)>) {
    let mut args = Vec::new();
    let mut kwargs = Vec::new();
    if let Some(list) = field!(call, "arguments") {
        let mut c = list.walk();
        for a in list.named_children(&mut c) {
            match a.kind() {
                "keyword_argument" => {
                    if let (Some(n), Some(v)) = (field!(a, "name"), field!(a, "value")) {
                        kwargs.push((src[n.byte_range()].to_string(), v));
                    }
                }
                "comment" => {}
                _ => args.push(a),
            }
        }
    }
    (args, kwargs)
}

/// The step of `var += STEP` written directly in a loop body.
fn direct_augmented_step<'a>(body: Node<'a>, var: &str, src: &str) -> Option<Node<'a>> {
    let mut c = body.walk();
    for stmt in body.named_children(&mut c) {
        let inner = if stmt.kind() == "expression_statement" { stmt.named_child(0) } else { Some(stmt) };
        let Some(a) = inner.filter(|a| a.kind() == "augmented_assignment") else { continue };
        let left = field!(a, "left").map(|l| &src[l.byte_range()]);
        let op = field!(a, "operator").map(|o| &src[o.byte_range()]);
        if left == Some(var) && matches!(op, Some("+=") | Some("-=")) {
            return field!(a, "right");
        }
    }
    None
}

impl<'a> Kernel<'a> {
    pub fn param(&self, name: &str) -> Option<&Param<'a>> {
        self.params.iter().find(|p| p.name == name)
    }

    pub fn is_constexpr(&self, name: &str) -> bool {
        self.param(name).is_some_and(|p| p.constexpr)
    }

    pub fn tl_calls<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s KCall<'a>> + 's {
        self.calls.iter().filter(move |c| c.is_tl(name))
    }

    /// Every identifier `expr` depends on through assignments inside the
    /// kernel (flow-insensitive), including itself and pseudo identifiers for grid axes.
    pub fn deps(&self, expr: Node, src: &str) -> HashSet<String> {
        let mut ids = Vec::new();
        collect_identifiers(expr, src, &mut ids);
        self.closure(ids, src)
    }

    pub fn var_deps(&self, var: &str, src: &str) -> HashSet<String> {
        self.closure(vec![var.to_string()], src)
    }

    fn closure(&self, work: Vec<String>, src: &str) -> HashSet<String> {
        self.closure_before(work, src, usize::MAX)
    }

    /// Like `deps`, but follows only assignments written before byte `before`:
    /// what a value at that point can depend on in the same iteration and
    /// before, not what the loop computes from it afterwards.
    pub fn deps_before(&self, expr: Node, src: &str, before: usize) -> HashSet<String> {
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
    pub fn pid_axes(&self, expr: Node, src: &str) -> HashSet<String> {
        self.deps(expr, src).into_iter().filter_map(|d| d.strip_prefix("@pid").map(str::to_string)).collect()
    }

    /// Calls inside loop `l` (at any depth).
    pub fn calls_in_loop<'s>(&'s self, l: usize) -> impl Iterator<Item = &'s KCall<'a>> + 's {
        self.calls.iter().filter(move |c| c.loops.contains(&l))
    }

    /// A loop that walks tiles: its step, or a factor its variable is
    /// multiplied by, is a `tl.constexpr` block size.
    pub fn is_tile_loop(&self, l: usize, src: &str) -> bool {
        let lp = &self.loops[l];
        if let Some(step) = lp.step {
            let mut ids = Vec::new();
            collect_identifiers(step, src, &mut ids);
            if ids.iter().any(|i| self.is_constexpr(i)) {
                return true;
            }
        }
        let Some(var) = &lp.var else { return false };
        self.products.iter().any(|(a, b)| (a == var && self.is_constexpr(b)) || (b == var && self.is_constexpr(a)))
    }

    /// Whether the loop's variable starts from, or strides by, the grid (a
    /// grid-stride or per-program loop rather than a serial walk).
    pub fn loop_follows_grid(&self, l: usize, src: &str) -> bool {
        let lp = &self.loops[l];
        let mut parts: Vec<Node> = [lp.start, lp.step].into_iter().flatten().collect();
        if lp.kind == LoopKind::While {
            if let Some(var) = &lp.var {
                parts.extend(self.assigns.iter().filter(|a| &a.target == var && !lp.contains(a.node)).map(|a| a.value));
            }
        }
        parts.iter().any(|p| self.deps(*p, src).iter().any(|d| d.starts_with("@pid") || d.starts_with("@nprog")))
    }

    /// Whether `name` sizes a `tl.arange`: a block size, not a program count.
    fn is_arange_bound(&self, name: &str, src: &str) -> bool {
        self.tl_calls("arange").any(|c| c.args.iter().any(|a| &src[a.byte_range()] == name))
    }

    /// A grid-stride loop over tiles: it starts at the program's id and steps
    /// by the number of programs (`tl.num_programs(0)` or a `NUM_SMS` the host
    /// passes), so a grid sized to the GPU walks every tile.
    pub fn is_grid_stride(&self, l: usize, src: &str) -> bool {
        let lp = &self.loops[l];
        let (Some(start), Some(step)) = (lp.start, lp.step) else { return false };
        let start_deps = self.deps(start, src);
        let step_deps = self.deps(step, src);
        start_deps.iter().any(|d| d.starts_with("@pid"))
            && !step_deps.iter().any(|d| d.starts_with("@pid"))
            && (step_deps.iter().any(|d| d.starts_with("@nprog"))
                || step_deps.iter().any(|d| self.param(d).is_some() && !self.is_arange_bound(d, src)))
    }

    /// Time loops inside the kernel: outermost loops that are not tile loops,
    /// do not follow the grid, and both load and store in their body (they
    /// carry state from one step to the next).
    pub fn time_loops(&self, model: &FileModel) -> Vec<usize> {
        let src = model.src;
        let candidate = |l: usize| {
            !self.is_tile_loop(l, src)
                && !self.loop_follows_grid(l, src)
                && self.calls_in_loop(l).any(|c| c.is_tl("store"))
                && self.calls_in_loop(l).any(|c| c.is_tl("load"))
                && (self.calls_in_loop(l).any(|c| c.is_tl("dot") || c.is_tl("sum"))
                    || (0..self.loops.len()).any(|i| self.loop_is_within(i, l)))
        };
        (0..self.loops.len())
            .filter(|&l| candidate(l))
            .filter(|&l| {
                // Outermost such loop.
                let mut p = self.loops[l].parent;
                while let Some(pl) = p {
                    if candidate(pl) {
                        return false;
                    }
                    p = self.loops[pl].parent;
                }
                true
            })
            .collect()
    }

    /// Whether loop `t` of kernel `k` is a recurrence: a state carried from step
    /// to step feeds a product (`tl.dot(h, w_hh)`, `tl.sum(h * w)`), either in
    /// registers (a name bound before the loop and rebound inside it, used
    /// directly as a product's operand) or through memory (a buffer the loop both
    /// stores to and loads from). A flash-attention key-block loop (its running
    /// `acc`, `m_i` are accumulators, never a product's operand) and a norm's row
    /// loop are not.
    pub fn is_recurrence(&self, t: usize, model: &FileModel) -> bool {
        let k = self;
        let src = model.src;
        // A name read here holds the previous step's value when the loop rebinds
        // it only after this point.
        let from_previous_step = |name: &str, at: usize| {
            let mut rebinds = k.assigns.iter().filter(|a| a.loops.contains(&t) && !a.augmented && a.target == name);
            let mut later = false;
            for a in rebinds.by_ref() {
                if a.node.end_byte() <= at {
                    return false;
                }
                later = true;
            }
            later
        };
        let products = k.calls_in_loop(t).filter(|c| c.is_tl("dot") || c.is_tl("sum"));
        for call in products {
            let operands: Vec<Node> = if call.is_tl("dot") {
                [call.arg(0, "input"), call.arg(1, "other")].into_iter().flatten().collect()
            } else {
                call.arg(0, "input").into_iter().collect()
            };
            for o in operands {
                let mut ids = Vec::new();
                collect_identifiers(o, src, &mut ids);
                if ids.iter().any(|i| from_previous_step(i, o.start_byte())) {
                    return true;
                }
            }
        }
        let bases = |name: &str| -> HashSet<String> {
            k.calls_in_loop(t)
                .filter(|c| c.is_tl(name))
                .filter_map(|c| c.arg(0, "pointer").and_then(|p| k.pointer_base(p, src)))
                .collect()
        };
        let stored = bases("store");
        bases("load").iter().any(|b| stored.contains(b))
    }

    /// The leftmost name of a pointer expression after following local
    /// aliases: the buffer a `tl.load`/`tl.store` addresses.
    pub fn pointer_base(&self, ptr: Node, src: &str) -> Option<String> {
        let mut node = ptr;
        for _ in 0..16 {
            match node.kind() {
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

    /// Whether the kernel (or a `@triton.jit` helper it calls) spins on a
    /// grid-wide barrier inside loop `l`: an atomic plus a spinning `while`.
    pub fn has_grid_barrier_in(&self, l: usize, model: &FileModel) -> bool {
        let atomics = self.calls_in_loop(l).any(|c| c.tl_name.as_deref().is_some_and(|n| n.starts_with("atomic_")));
        let spin = (0..self.loops.len()).any(|i| {
            let lp = &self.loops[i];
            lp.kind == LoopKind::While && self.loop_is_within(i, l) && self.is_spin(i, model)
        });
        if atomics && spin {
            return true;
        }
        self.calls_in_loop(l).any(|c| {
            c.tl_name.is_none()
                && model
                    .kernel(&c.callee)
                    .is_some_and(|helper| helper.name != self.name && helper.is_grid_barrier(model))
        })
    }

    fn loop_is_within(&self, inner: usize, outer: usize) -> bool {
        let mut p = self.loops[inner].parent;
        while let Some(x) = p {
            if x == outer {
                return true;
            }
            p = self.loops[x].parent;
        }
        false
    }

    /// A `while` loop that waits on memory: its condition or body reads
    /// through an atomic or a (volatile) load.
    fn is_spin(&self, i: usize, model: &FileModel) -> bool {
        let lp = &self.loops[i];
        let head = lp.head.map(|h| model.text(h)).unwrap_or("");
        head.contains("atomic_")
            || head.contains(".load(")
            || self
                .calls_in_loop(i)
                .any(|c| c.tl_name.as_deref().is_some_and(|n| n.starts_with("atomic_") || n == "load"))
            || self.spin_var_reads_memory(lp, model)
    }

    /// `while count < target:` where `count` comes from an atomic or a load.
    fn spin_var_reads_memory(&self, lp: &Loop, model: &FileModel) -> bool {
        let Some(var) = &lp.var else { return false };
        self.assigns
            .iter()
            .filter(|a| &a.target == var)
            .any(|a| model.text(a.value).contains("atomic_") || model.text(a.value).contains(".load("))
    }

    /// A helper that is itself a barrier: atomics and a spinning `while`.
    pub fn is_grid_barrier(&self, model: &FileModel) -> bool {
        let atomics = self.calls.iter().any(|c| c.tl_name.as_deref().is_some_and(|n| n.starts_with("atomic_")));
        atomics && (0..self.loops.len()).any(|i| self.loops[i].kind == LoopKind::While && self.is_spin(i, model))
    }
}
