//! The file model: what a Triton kernel file contains, read off the
//! tree-sitter syntax tree in one walk (`walk.rs`).
//!
//! Kernels (`@triton.jit` defs, also under `@triton.autotune`/`@triton.heuristics`)
//! with their parameters, loops, `tl.*` calls, assignments and subscripts; host
//! functions (module scope, functions, methods) with their loops, calls,
//! launches (`kernel[grid](...)`) and host syncs; classes; suppression and
//! reference comments. The model holds tree-sitter nodes borrowed from the
//! tree, so rules can look closer where they need to. This file holds the
//! model and the items of host code; the questions several rules ask are
//! answered beside it, once: names and scopes (`scopes.rs`), host loops
//! (`host_loops.rs`), launches (`launches.rs`), kernels (`kernel.rs`,
//! `dataflow.rs`).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use super::Forest;
use tree_sitter::Node;

use super::index::NodeIndex;
use super::nodes::range_of;
use super::walk::{Scope, Walker};
use super::{imports_of, Kernel, KernelHostView};
use crate::model::NodeKind;
use crate::text::TextRange;

/// The statements of `units` that are walked, not stubs.
fn walked_units<'a>(units: &[PartialUnit<'a, '_>]) -> Vec<Node<'a>> {
    units.iter().filter(|(_, stub)| stub.is_none()).map(|(n, _)| *n).collect()
}

/// A top-level statement for [`FileModel::build_stubbed`]: walked (`None`),
/// or a stub.
pub type PartialUnit<'a, 'v> = (Node<'a>, Option<Stub<'v>>);

/// How a statement is read without walking it.
#[derive(Debug, Clone, Copy)]
pub enum Stub<'v> {
    /// A statement that only defines kernels: their headers, and their host views in document order.
    Kernels(&'v [Arc<KernelHostView>]),
    /// A plain top-level `def` of host code: its header, and what other
    /// functions read of it ([`HostStub`]).
    Host(&'v Arc<HostStub>),
}

/// What the host rules read of a host function other than the one they
/// report on, kept from the analysis that walked it, for a function read as
/// a stub ([`Stub::Host`]): its calls to functions of this file (to follow
/// them: `FileModel::callees`, `candidate::reachable`) and whether it launches.
/// A question that needs more of a stub (its loops, syncs, assignments,
/// launch sites) records it in the [`StubReads`] its caller passed, and the
/// analysis is made again with that function walked (so is a stub whose calls
/// are not found again in the tree).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostStub {
    /// Its header as `Walker::function` reads it, each byte range relative to
    /// the statement's start: its name's, and its parameters' names'.
    pub name_range: (u32, u32),
    pub params: Box<[(u32, u32)]>,
    /// Its calls to functions of this file ([`HCall`]): the call's byte range
    /// relative to the statement's start, and its callee key.
    pub calls: Box<[(u32, u32, String)]>,
    /// It launches a kernel (`kernel[grid](...)`, resolved).
    pub launches: bool,
    /// It holds a `name[grid](...)` call (resolved or not).
    pub launch_candidates: bool,
    /// Calls inside it of the form `X.apply(...)`: the `X`s (`candidate::reachable`).
    pub apply_classes: Box<[String]>,
    /// What its calls inside a loop may reach (as `checker`
    /// names them: `helper`, `method`, `class:X`): the loops around a call
    /// multiply a callee's time-loop estimate.
    pub calls_in_loops_to: Box<[String]>,
}

#[derive(Debug, Clone)]
pub struct ClassInfo<'a> {
    pub name: String,
    pub name_range: TextRange,
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

/// Whether loop `inner` is nested (at any depth) in loop `outer`, both of one function's `loops`.
pub(crate) fn loop_within(loops: &[Loop], inner: usize, outer: usize) -> bool {
    let mut p = loops[inner].parent;
    while let Some(x) = p {
        if x == outer {
            return true;
        }
        p = loops[x].parent;
    }
    false
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
    /// A function read as a stub: only its header and `calls` (without their
    /// loops) are in the model, and this says the rest other functions read.
    pub stub: Option<Arc<HostStub>>,
    /// A top-level statement, or the definition of a decorated one.
    pub module_level: bool,
}

impl<'a> HostFn<'a> {
    /// A function as its header gives it: nothing of its body read yet.
    pub(super) fn from_header(
        name: String,
        class: Option<String>,
        node: Node<'a>,
        name_range: TextRange,
        params: Vec<String>,
        module_level: bool,
    ) -> Self {
        HostFn {
            name,
            class,
            node,
            name_range,
            params,
            loops: Vec::new(),
            calls: Vec::new(),
            launches: Vec::new(),
            assigns: Vec::new(),
            syncs: Vec::new(),
            stub: None,
            module_level,
        }
    }
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
    pub(crate) fn kwarg(&self, name: &str) -> Option<Node<'a>> {
        self.kwargs.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }

    /// What the launch passes for parameter `name`, the `index`-th of its
    /// kernel: by keyword, or by position (while no `*args` comes before it).
    pub(crate) fn value_for(&self, name: &str, index: usize) -> Option<Node<'a>> {
        self.kwarg(name).or_else(|| {
            let positional = &self.args[..self.args.len().min(index + 1)];
            if positional.iter().any(|a| a.kind_name() == "list_splat") {
                return None;
            }
            self.args.get(index).copied()
        })
    }
}

/// `# kernel-lsp: ignore` / `# kernel-lsp: ignore[KL001, ...]`.
#[derive(Debug, Clone, PartialEq)]
pub enum Suppression {
    All,
    Codes(Vec<String>),
}

impl Suppression {
    pub(crate) fn covers(&self, code: &str) -> bool {
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
    pub tree: &'a Forest,
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
    /// Units of work done answering questions that follow names (assignments
    /// followed, callee candidates weighed, call-graph nodes visited): the
    /// scaling tests bound it, because a wall clock in a unit test proves nothing.
    steps: AtomicUsize,
    /// Host functions by name, each list in document order (built on first use).
    pub(super) fn_index: OnceLock<super::scopes::FnIndex>,
    /// [`super::candidate::imports`] and [`super::candidate::candidate_host_nodes`],
    /// asked by several host rules of one model (built on first use).
    pub(super) imports: OnceLock<super::candidate::Imports>,
    pub(super) candidate_host: OnceLock<Vec<Node<'a>>>,
    /// (index in `classes`, attribute) -> the classes of this file that
    /// `self.attribute = Class(...)` binds in that class (`FileModel::callees`).
    pub(super) held_index: OnceLock<HashMap<(usize, String), Vec<&'a str>>>,
    /// Nodes by kind for the whole-file questions (built on first use).
    nodes: OnceLock<NodeIndex<'a>>,
    /// [`super::time_loop_launches`], asked by KL001 and the kernel summaries
    /// (built on first use), with the host stubs it read beyond what they keep.
    time_loop_launches: OnceLock<(Vec<super::TimeLoopLaunches>, Vec<usize>)>,
    /// For a model of some top-level statements: those whose nodes the
    /// node index lists (the statements walked, not those stubbed).
    indexed: Option<Vec<Node<'a>>>,
    /// Names -> indexes, so that questions asked once per kernel, launch or
    /// function stay linear (built on first use; see `by_name`).
    by_name: OnceLock<ByName>,
    /// The top-level statements (the root's children), in order (built on first use).
    top: OnceLock<Vec<Node<'a>>>,
}

/// What [`FileModel::kernel`], [`FileModel::launches_of_kernel`] and
/// [`FileModel::kernel_calls_to`] look up: indexes sorted by name (a stable
/// sort: document order within a name), found by binary search. Three lists,
/// where maps of names allocated a key and a list per name on every model.
#[derive(Default)]
struct ByName {
    /// Every kernel (a file may define one name again).
    kernels: Vec<usize>,
    /// Calls inside kernels to a plain name (not `tl.*`): (kernel, index in its `calls`), by callee.
    kernel_calls: Vec<(usize, usize)>,
    /// Launches, by kernel name.
    launches: Vec<usize>,
}

/// The part of `list` (sorted by `name_of`) whose name is `name`.
pub(super) fn named<'l, 'n, T>(list: &'l [T], name: &str, name_of: impl Fn(&T) -> &'n str) -> &'l [T] {
    let lo = list.partition_point(|t| name_of(t) < name);
    let hi = lo + list[lo..].partition_point(|t| name_of(t) == name);
    &list[lo..hi]
}

/// The host stubs ([`HostStub`]) that questions of a model read beyond what
/// a stub keeps, as `host_fns` indexes. A question that may need more of a
/// host function than its stub keeps takes one in its signature and records
/// there; whoever passed it learns which answers may be incomplete (the
/// checker then reads those functions walked). The host rules share one
/// across the two threads they run on.
#[derive(Debug, Default)]
pub struct StubReads(std::sync::Mutex<Vec<usize>>);

impl StubReads {
    /// Records that a question needed what host stub `f` does not keep.
    pub fn record(&self, f: usize) {
        self.lock().push(f);
    }

    /// The stubs recorded, by the start of their `def` in `model`; empty when none was.
    pub fn starts(&self, model: &FileModel) -> Vec<usize> {
        self.lock().iter().map(|&f| model.host_fns[f].node.start_byte()).collect()
    }

    fn take(&self) -> Vec<usize> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<usize>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl<'a> FileModel<'a> {
    pub fn build(src: &'a str, tree: &'a Forest) -> Self {
        Self::build_from(src, tree, None, None, false, &StubReads::default())
    }

    /// [`Self::build`] of a piece of a file (a statement a fix rewrote),
    /// read with the imports of the file it comes from, `whole`.
    pub(crate) fn build_piece(src: &'a str, tree: &'a Forest, whole: &FileModel) -> Self {
        let aliases = (whole.tl_aliases.clone(), whole.triton_aliases.clone());
        Self::build_from(src, tree, None, Some(&aliases), false, &StubReads::default())
    }

    /// [`Self::build`], with the whole-file node index ([`Self::nodes`])
    /// built at the same time on the helper thread (`crate::fork`): what a file whose hygiene
    /// rules will ask for it (a candidate) saves of its wall time. The result
    /// is the same as asking [`Self::nodes`] later.
    pub(crate) fn build_with_index(src: &'a str, tree: &'a Forest) -> Self {
        Self::build_index_beside(src, tree, None, None, &StubReads::default())
    }

    /// [`Self::build_from`], with the node index of the statements walked
    /// (the whole module without `units`) built on the helper thread meanwhile.
    fn build_index_beside(
        src: &'a str,
        tree: &'a Forest,
        units: Option<&[PartialUnit<'a, '_>]>,
        aliases: Option<&(Vec<String>, Vec<String>)>,
        stubs: &StubReads,
    ) -> Self {
        let walked: Vec<Node<'a>> = match units {
            Some(units) => walked_units(units),
            None => tree.roots().collect(),
        };
        let (model, index) = crate::fork::join(
            || Self::build_from(src, tree, units, aliases, false, stubs),
            || NodeIndex::build_units(&walked, src),
        );
        let _ = model.nodes.set(index);
        model
    }

    /// The model of only some top-level statements of the file (children of
    /// the root, in document order): what the incremental analysis re-reads
    /// after an edit. Imports are still read from the whole module.
    /// `aliases` are what [`imports`] gives for the whole module.
    pub(crate) fn build_partial(
        src: &'a str,
        tree: &'a Forest,
        units: &[Node<'a>],
        aliases: &(Vec<String>, Vec<String>),
    ) -> Self {
        let units: Vec<PartialUnit<'a, '_>> = units.iter().map(|u| (*u, None)).collect();
        Self::build_from(src, tree, Some(&units), Some(aliases), true, &StubReads::default())
    }

    /// [`Self::build_partial`] where some statements are stubs: statements
    /// that only define kernels (`Some(views)`: their kernels' host views, in
    /// document order), of which only the kernels' headers are read. Their
    /// kernels answer the host-side questions from the views
    /// ([`Kernel::stub`]); the kernel rules must not be asked about them, and
    /// the node index ([`Self::nodes`]) lists only the statements walked.
    /// `None` if a stub's kernels are not the ones its views describe.
    /// With `index_beside`, the node index is built on the helper thread while the model is.
    /// A host stub whose calls are not where it says is walked, and recorded in `stubs`.
    pub(crate) fn build_stubbed(
        src: &'a str,
        tree: &'a Forest,
        units: &[PartialUnit<'a, '_>],
        aliases: &(Vec<String>, Vec<String>),
        index_beside: bool,
        stubs: &StubReads,
    ) -> Option<Self> {
        let mut model = if index_beside {
            Self::build_index_beside(src, tree, Some(units), Some(aliases), stubs)
        } else {
            Self::build_from(src, tree, Some(units), Some(aliases), true, stubs)
        };
        // Every kernel lies in one of `units` (in document order): in the
        // last whose start is at or before its own. Starts only: a node's
        // end is read from its subtree, a cache miss per statement.
        let mut next = 0;
        for (i, (unit, views)) in units.iter().enumerate() {
            let (start, end) = (unit.start_byte(), units.get(i + 1).map_or(usize::MAX, |(u, _)| u.start_byte()));
            let here = |k: &Kernel| (start..end).contains(&k.node.start_byte());
            while next < model.kernels.len() && model.kernels[next].node.start_byte() < start {
                next += 1;
            }
            let Some(Stub::Kernels(views)) = views else { continue };
            for view in views.iter() {
                let k = model.kernels.get_mut(next).filter(|k| here(k))?;
                if k.params.iter().map(|p| p.name).ne(view.params.iter().map(String::as_str)) {
                    return None;
                }
                k.stub = Some(view.clone());
                next += 1;
            }
            if model.kernels.get(next).is_some_and(here) {
                return None;
            }
        }
        Some(model)
    }

    fn build_from(
        src: &'a str,
        tree: &'a Forest,
        units: Option<&[PartialUnit<'a, '_>]>,
        aliases: Option<&(Vec<String>, Vec<String>)>,
        collect_index: bool,
        stubs: &StubReads,
    ) -> Self {
        // The `<module>` function's node: the first chunk's root (see `Forest`).
        let root = tree.roots().next().expect("a forest has a tree");
        let (tl_aliases, triton_aliases) = match aliases {
            Some((tl, triton)) => (tl.clone(), triton.clone()),
            None => imports_of(&tree.top_level(), src),
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
            has_syntax_errors: tree.has_error(),
            steps: AtomicUsize::new(0),
            fn_index: OnceLock::new(),
            imports: OnceLock::new(),
            candidate_host: OnceLock::new(),
            held_index: OnceLock::new(),
            nodes: OnceLock::new(),
            time_loop_launches: OnceLock::new(),
            indexed: units.map(walked_units),
            by_name: OnceLock::new(),
            top: OnceLock::new(),
        };
        model.host_fns.push(HostFn::from_header(
            "<module>".to_string(),
            None,
            root,
            TextRange::new(0, 0),
            Vec::new(),
            false,
        ));
        // A partial build keeps the node index of the statements it walks as it
        // walks them (a whole-file one is asked of candidates only, on first use).
        // Statements given for every child of the root are the top-level
        // statements (`top_statement`): no second walk of the root's children.
        let top_count: usize = tree.roots().map(|r| r.child_count() as usize).sum();
        if let Some(units) = units.filter(|u| u.len() == top_count) {
            let top: Vec<Node<'a>> = units.iter().map(|(n, _)| *n).collect();
            debug_assert!(top.iter().zip(tree.top_level()).all(|(a, b)| *a == b));
            let _ = model.top.set(top);
        }
        let index = (units.is_some() && collect_index).then(NodeIndex::default);
        let mut walker = Walker { m: &mut model, pending_launches: Vec::new(), stub_kernels: false, index };
        match units {
            // Each top-level statement is walked exactly as the walk of the root reaches it (depth 1).
            Some(units) => {
                for (unit, stub) in units {
                    // A stub whose calls are not where it says is walked, and
                    // recorded as read: the analysis reads it again as a statement walked.
                    if let Some(Stub::Host(facts)) = stub {
                        if walker.host_stub(*unit, facts) {
                            continue;
                        }
                        let f = walker.m.host_fns.len();
                        walker.visit_unindexed(*unit);
                        if f < walker.m.host_fns.len() {
                            stubs.record(f);
                        }
                        continue;
                    }
                    if let Some(Stub::Kernels([view])) = stub {
                        if walker.kernel_stub(*unit, view) {
                            continue;
                        }
                    }
                    walker.stub_kernels = stub.is_some();
                    if stub.is_some() {
                        walker.visit_unindexed(*unit);
                    } else {
                        walker.visit(*unit, Scope::Host(0), &mut Vec::new(), None, 1);
                    }
                }
            }
            None => {
                for root in tree.roots() {
                    walker.visit(root, Scope::Host(0), &mut Vec::new(), None, 0);
                }
            }
        }
        let pending = std::mem::take(&mut walker.pending_launches);
        if let Some(mut index) = walker.index.take() {
            index.finish();
            #[cfg(debug_assertions)]
            if let Some(units) = &model.indexed {
                assert_eq!(
                    index,
                    NodeIndex::build_units(units, src),
                    "the walk's node index differs from a walk of its own"
                );
            }
            let _ = model.nodes.set(index);
        }
        model.resolve_launches(pending);
        model.reference = model.directives.iter().rev().find_map(|(_, d)| match d {
            Directive::Reference(path) => Some(path.clone()),
            Directive::Ignore(_) => None,
        });
        model
    }

    /// The top-level statement (a child of the root) that holds byte `at`: a
    /// binary search, where walking `Node::parent` up from a node costs a
    /// scan of the root's children for every step.
    pub(super) fn top_statement(&self, at: usize) -> Option<Node<'a>> {
        let top = self.top.get_or_init(|| self.tree.top_level());
        let i = top.partition_point(|n| n.start_byte() <= at).checked_sub(1)?;
        Some(top[i]).filter(|n| at < n.end_byte())
    }

    /// Work done so far by the name-following questions (see the field).
    pub fn steps(&self) -> usize {
        self.steps.load(Ordering::Relaxed)
    }

    pub(super) fn step(&self, n: usize) {
        self.steps.fetch_add(n, Ordering::Relaxed);
    }

    /// Imports, calls, assignments, attributes, `try` statements and
    /// `__builtins__` of the whole file, in document order (one walk, on first use).
    pub(crate) fn nodes(&self) -> &NodeIndex<'a> {
        self.nodes.get_or_init(|| match &self.indexed {
            Some(units) => NodeIndex::build_units(units, self.src),
            None => NodeIndex::build_units(&self.tree.roots().collect::<Vec<_>>(), self.src),
        })
    }

    /// The Python time loops that relaunch kernels ([`super::time_loop_launches`]),
    /// found once; the host stubs that took read beyond what they keep are
    /// recorded in `reads` on every call.
    pub(crate) fn time_loop_launches(&self, reads: &StubReads) -> &[super::TimeLoopLaunches] {
        let (found, read) = self.time_loop_launches.get_or_init(|| {
            let own = StubReads::default();
            let found = super::time_loop_launches(self, &own);
            (found, own.take())
        });
        for &f in read {
            reads.record(f);
        }
        found
    }

    pub fn text(&self, node: Node) -> &'a str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    pub fn kernel(&self, name: &str) -> Option<&Kernel<'a>> {
        self.kernels_named(name).first().map(|&k| &self.kernels[k])
    }

    /// The launches that reach kernel `k` itself, resolved as names are (the
    /// definition of that name last before the launch, else the first one):
    /// where a file defines a name again (a concatenated or generated module),
    /// each definition gets the launches written under it, and a question
    /// asked once per kernel stays linear in the file.
    pub(crate) fn launches_of_kernel<'s>(&'s self, k: &Kernel<'_>) -> impl Iterator<Item = &'s Launch<'a>> + 's {
        let launches = named(&self.by_name().launches, &k.name, |&l| self.launches[l].kernel.as_str());
        let range = self.resolved_to(k, launches, |&li| self.launches[li].node.start_byte());
        launches[range].iter().map(|&i| &self.launches[i])
    }

    /// The calls inside other kernels that reach helper `k` itself, resolved as
    /// [`Self::launches_of_kernel`] resolves launches: (calling kernel, index in its `calls`).
    pub(crate) fn kernel_calls_to(&self, k: &Kernel<'_>) -> &[(usize, usize)] {
        let calls = named(&self.by_name().kernel_calls, &k.name, |&(ki, c)| self.kernels[ki].calls[c].callee.as_str());
        let range = self.resolved_to(k, calls, |&(ki, c)| self.kernels[ki].calls[c].node.start_byte());
        &calls[range]
    }

    /// The part of `sites` (uses of `k`'s name, in document order) that the
    /// definition `k` binds: from `k` (from the start for the first definition
    /// of the name) to the next definition of the same name.
    fn resolved_to<T>(&self, k: &Kernel<'_>, sites: &[T], at: impl Fn(&T) -> usize) -> std::ops::Range<usize> {
        let same_name = self.kernels_named(&k.name);
        let start_of = |i: usize| self.kernels[i].node.start_byte();
        let Some(j) = same_name.iter().position(|&i| start_of(i) == k.node.start_byte()) else { return 0..0 };
        let from = if j == 0 { 0 } else { sites.partition_point(|s| at(s) < start_of(same_name[j])) };
        let to = same_name.get(j + 1).map_or(sites.len(), |&next| sites.partition_point(|s| at(s) < start_of(next)));
        from..to.max(from)
    }

    fn by_name(&self) -> &ByName {
        self.by_name.get_or_init(|| {
            let mut kernels: Vec<usize> = (0..self.kernels.len()).collect();
            kernels.sort_by(|&a, &b| self.kernels[a].name.cmp(&self.kernels[b].name));
            let mut kernel_calls: Vec<(usize, usize)> = self
                .kernels
                .iter()
                .enumerate()
                .flat_map(|(i, k)| {
                    k.calls.iter().enumerate().filter(|(_, c)| c.tl_name.is_none()).map(move |(c, _)| (i, c))
                })
                .collect();
            let callee = |&(i, c): &(usize, usize)| self.kernels[i].calls[c].callee.as_str();
            kernel_calls.sort_by(|a, b| callee(a).cmp(callee(b)));
            let mut launches: Vec<usize> = (0..self.launches.len()).collect();
            launches.sort_by(|&a, &b| self.launches[a].kernel.cmp(&self.launches[b].kernel));
            ByName { kernels, kernel_calls, launches }
        })
    }

    /// The kernels named `name`, in document order.
    fn kernels_named(&self, name: &str) -> &[usize] {
        named(&self.by_name().kernels, name, |&k| self.kernels[k].name.as_str())
    }

    pub(crate) fn is_tl_alias(&self, name: &str) -> bool {
        self.tl_aliases.iter().any(|a| a == name)
    }

    fn resolve_launches(&mut self, pending: Vec<Launch<'a>>) {
        let known: HashSet<&str> = self.kernels.iter().map(|k| k.name.as_str()).collect();
        for launch in pending {
            let looks_like_kernel =
                known.contains(launch.kernel.as_str()) || launch.kernel.to_ascii_lowercase().contains("kernel");
            if !looks_like_kernel {
                continue;
            }
            let idx = self.launches.len();
            self.host_fns[launch.host_fn].launches.push(idx);
            self.launches.push(launch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk does not enter a node whose children are all leaves unless a
    /// comment or `__builtins__` is among them: a directive inside an
    /// argument list, and `__builtins__` passed as an argument, are still read.
    #[test]
    fn the_leaves_the_walk_skips_hold_no_directive_and_no_builtins() {
        let src = "def f(x):\n    g(x,  # kernel-lsp: reference = ref.py\n      1)\n    h(__builtins__)\n";
        let tree = crate::model::parse_forest(src);
        let model = FileModel::build(src, &tree);
        assert_eq!(model.reference.as_deref(), Some("ref.py"));
        let units = tree.top_level();
        let partial = FileModel::build_partial(src, &tree, &units, &imports_of(&units, src));
        let builtins: Vec<&str> = partial.nodes().builtins.iter().map(|n| partial.text(*n)).collect();
        assert_eq!(builtins, ["__builtins__"]);
    }

    #[test]
    fn a_kernel_defined_again_gets_the_launches_written_under_it() {
        let src = "import triton\nimport triton.language as tl\n\n\
                   def run_a(x):\n    k[(1,)](x)\n\n\
                   @triton.jit\ndef k(x_ptr):\n    pass\n\n\
                   def run_b(x):\n    k[(2,)](x)\n    k[(3,)](x)\n\n\
                   @triton.jit\ndef k(x_ptr):\n    pass\n\n\
                   def run_c(x):\n    k[(4,)](x)\n";
        let tree = crate::model::parse_forest(src);
        let model = FileModel::build(src, &tree);
        assert_eq!(model.kernels.len(), 2);
        let grids = |k: &Kernel| -> Vec<String> {
            model.launches_of_kernel(k).map(|l| model.text(l.grid).to_string()).collect()
        };
        // the launch before any definition resolves to the first one, as a call does
        assert_eq!(grids(&model.kernels[0]), ["(1,)", "(2,)", "(3,)"]);
        assert_eq!(grids(&model.kernels[1]), ["(4,)"]);
        assert_eq!(model.launches.iter().filter(|l| l.kernel == "k").count(), 4);
    }

    #[test]
    fn a_helper_defined_again_gets_the_calls_written_under_it() {
        let src = "import triton\nimport triton.language as tl\n\n\
                   @triton.jit\ndef h(x):\n    return x\n\n\
                   @triton.jit\ndef k1(p):\n    h(1)\n\n\
                   @triton.jit\ndef h(x):\n    return x\n\n\
                   @triton.jit\ndef k2(p):\n    h(2)\n    h(3)\n";
        let tree = crate::model::parse_forest(src);
        let model = FileModel::build(src, &tree);
        let names: Vec<&str> = model.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["h", "k1", "h", "k2"]);
        let args = |k: &Kernel| -> Vec<String> {
            model
                .kernel_calls_to(k)
                .iter()
                .map(|&(ki, c)| model.text(model.kernels[ki].calls[c].args[0]).to_string())
                .collect()
        };
        assert_eq!(args(&model.kernels[0]), ["1"]);
        assert_eq!(args(&model.kernels[2]), ["2", "3"]);
    }

    /// A partial build notes its node index as it walks (`Walker::index`):
    /// the parts the walk does not enter (decorators, a `def`'s parameters
    /// and return annotation, a class's bases, a `for` target, a body past
    /// the walk's depth limit) are read for it alone, and the lists come out
    /// as one walk of the statements gives them, in document order, each node
    /// once. The fixtures and examples are checked the same way.
    #[test]
    fn the_walks_node_index_is_a_walk_of_the_statements() {
        let mut deep = String::from("def deep(x):\n    return ");
        deep.push_str(&"f(".repeat(260));
        deep.push('x');
        deep.push_str(&")".repeat(260));
        deep.push('\n');
        let crafted = format!(
            "import torch\nimport triton\nimport triton.language as tl\nfrom os import path\n\n\
             @triton.jit(do_not_specialize=[torch.int32.bit])\ndef k(x_ptr, n: tl.constexpr = tl.int32.size, B=cfg.get(1)):\n    \
             try:\n        tl.store(x_ptr, tl.load(x_ptr))\n    except E:\n        pass\n\n\
             class ModelNew(torch.nn.Module, metaclass=meta.of(1)):\n    \
             def forward(self, x, y=torch.zeros(3).cuda()) -> torch.Tensor:\n        \
             for self.i, o.j in enumerate(x.items()):\n            a = b = x.sum()\n        \
             else:\n            __builtins__.print(x)\n        while g(x):\n            x += h(x)\n        \
             else:\n            import math\n        return k[(1,)](x)\n\n{deep}\ndef broken(x:\n    y = q(x\n"
        );
        let mut texts = vec![crafted];
        for dir in ["tests/fixtures/rules", "examples"] {
            let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir);
            let mut stack = vec![root];
            while let Some(d) = stack.pop() {
                for e in std::fs::read_dir(&d).unwrap().flatten() {
                    let p = e.path();
                    if p.is_dir() {
                        stack.push(p);
                    } else if p.extension().is_some_and(|x| x == "py") {
                        texts.push(std::fs::read_to_string(&p).unwrap());
                    }
                }
            }
        }
        assert!(texts.len() > 20, "fixtures and examples found: {}", texts.len());
        for text in &texts {
            let tree = crate::model::parse_forest(text);
            let units = tree.top_level();
            let aliases = imports_of(&units, text);
            let model = FileModel::build_partial(text, &tree, &units, &aliases);
            let walked = model.nodes.get().expect("a partial build keeps the index it noted");
            assert_eq!(*walked, NodeIndex::build_units(&tree.roots().collect::<Vec<_>>(), text), "{text}");
        }
        let tree = crate::model::parse(&texts[0], None);
        let one = NodeIndex::build(tree.root_node(), &texts[0]);
        assert!(one.calls.len() > 270 && one.attributes.len() > 10 && one.tries.len() == 1 && one.builtins.len() == 1);
    }
}
