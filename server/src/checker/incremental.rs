//! Incremental analysis per top-level statement.
//!
//! A [`Snapshot`] keeps, for every top-level statement of the module (a
//! child of the root: a kernel, a host function, a class, an import, a
//! comment...), what the analysis found in it: the diagnostics of the kernel
//! rules for the kernels defined there and of KL005 for its `tl.*`
//! attributes, its kernel summaries, classes and `# kernel-lsp:` comments,
//! and the few facts that other statements can read (kernel names, the
//! helpers its kernels call, the kernels it launches, whether it assigns
//! module-level names or contributes host code). The host rules (KL001,
//! KL010) and the launch figures of the kernel summaries are kept for the
//! whole file.
//!
//! After an edit, the statements before and after the edited span that read
//! as they did (same kind and text; for one with a syntax error, the same
//! syntax tree) keep their facts, shared with the previous snapshot and moved
//! by the bytes they moved. The changed statements are re-read, with
//! [`FileModel::build_partial`], together with what their kernel rules read:
//! the helpers their kernels call, the statements that launch them and the
//! module-level assignments. That is exact only while no host code changed,
//! so the incremental path is taken only when every changed statement, before
//! and after, contributes nothing to host code (no host function, class,
//! module-level loop, call, assignment, sync or launch, no import), defines
//! the same kernel names in the same order with the same parameters and the
//! same pointers loaded and stored (the host rules read those), and, in a candidate, has no
//! finding of the hygiene rules before or after (they report in kernels and
//! read inside them); otherwise,
//! and whenever a cached position cannot be mapped, the file is analysed
//! afresh, or, when the edit is in host code (a launching helper,
//! `forward`, a class) or reaches what the host rules read of a kernel,
//! analysed on the host path: the host rules run again,
//! on a model in which every statement that only defines kernels the edit
//! cannot affect is a stub (its kernels' headers are read, not their bodies;
//! what the host rules ask of them comes from the views kept here), and those
//! statements keep their kernel-rule, KL005, KL107 and KL108 findings
//! (`host_incremental`). On that path, once a host-path analysis has kept
//! how each statement's host code links to the others (`HostLinks`), a plain
//! top-level `def` of host code that the edit cannot reach is a **host
//! stub** too (`host_stubs`): only its header and its calls to functions of
//! this file are read (`model::HostStub`), and it keeps its own findings; a
//! rule that needs more of it (its launch sites, syncs, loops) marks the
//! model and the analysis is made again with that function walked. Either way the
//! result equals [`super::check`] on the same text (the property tests in
//! `lsp::document` check that on random edit sequences, on all three paths).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tree_sitter::{Node, Tree};

use super::{CheckResult, ClassSummary, KernelSummary};
use crate::config::Settings;
use crate::diagnostic::Diagnostic;
use crate::model::{
    imports_of, kernel_host_view, launch_estimates, range_of, Directive, FileModel, HostStub, KernelHostView, Stub,
};
use crate::model::candidate::{self, Imports};
use crate::rules::{self, Reach};
use crate::text::{LineIndex, TextRange};

/// The analysis of one version of a file, kept to analyse the next version incrementally.
pub struct Snapshot {
    settings: Settings,
    /// The text analysed, to tell which statements an edit left as they were.
    text: Arc<str>,
    tl_aliases: Vec<String>,
    triton_aliases: Vec<String>,
    units: Vec<Unit>,
    /// Host-rule diagnostics (KL001, KL010) that span several statements,
    /// and anything outside every statement; in current positions.
    host_diags: Vec<Diagnostic>,
    /// Kernel name -> launches-per-forward estimate (`model::launch_estimates`), for the summaries.
    estimates: HashMap<String, String>,
    /// Kernel name -> launch sites.
    launch_counts: HashMap<String, usize>,
    /// How this snapshot was made.
    path: Path,
    /// Statements read as stubs (the host path), for tests and benchmarks:
    /// kernel statements, and host functions (`host_stubs`).
    stubs: usize,
    host_stubs: usize,
    /// What the host stubs' own findings read of a candidate (`host_context`).
    context: HostContext,
    /// Statements that could be host stubs but that a rule needed walked
    /// (`FileModel::read_a_stub`) or that launch a walked kernel, in the last
    /// host-path analysis: the next one walks them from the start instead of
    /// finding out again.
    walk_again: Vec<usize>,
    /// How many models the host path built for this analysis (a retry after a
    /// stub was read builds another); 0 on the other paths.
    builds: usize,
    /// Whether the statements' facts hold their host links and host stubs
    /// (`HostLinks`, with their host stubs) and their kernels' headers
    /// (`KernelHostView::header`): not after a fresh analysis
    /// (a file opened and never edited keeps none), from the first host-path
    /// analysis on, which reads every statement but the kernel stubs.
    linked: bool,
    /// For a KernelBench candidate (a `ModelNew` file), whose hygiene rules
    /// (KL101-KL109) read the whole file: the imports they qualify names with.
    candidate: Option<Arc<Imports>>,
}

/// How a snapshot was made from the previous one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// A full analysis.
    Fresh,
    /// Only kernels changed: the changed statements and what their kernel
    /// rules read were re-read; the host rules' findings moved.
    Kernels,
    /// Host code changed: the host rules ran again, on a model whose
    /// unaffected kernel statements are stubs (`host_incremental`).
    Host,
}

/// A statement where it is now: what was found in it (shared between
/// snapshots while it does not change) and how far it moved since.
#[derive(Debug, Clone)]
struct Unit {
    facts: Arc<UnitFacts>,
    range: TextRange,
    /// Current position minus the position `facts` were read at.
    delta: isize,
    /// Kernel-rule diagnostics of the kernels here that reach into other
    /// statements (a launch site, a module constant); in current positions.
    foreign: Vec<Diagnostic>,
}

impl Unit {
    /// [`Unit::delta`] for this statement once it starts at `start`.
    fn delta_at(&self, start: usize) -> isize {
        self.delta + (start as isize - self.range.start as isize)
    }
}

/// What one top-level statement contributes, at the positions it was read at.
#[derive(Debug, Clone)]
struct UnitFacts {
    /// The statement's node kind.
    kind: u16,
    /// For a statement with a syntax error, its whole syntax tree (every
    /// node's kind and span): error recovery may read the same text differently,
    /// so such a statement is reused only if it parsed the same way.
    error_shape: Option<Vec<(u16, u32, u32)>>,
    /// Contributes nothing to host code (see the module doc).
    neutral: bool,
    kernels: Vec<KernelFacts>,
    /// Names the kernels defined here call that are not `tl.*` (possible `@triton.jit` helpers).
    helper_callees: Vec<String>,
    /// Kernels launched from here.
    launched: Vec<String>,
    /// Assigns a module-level name (read by constant evaluation).
    module_assigns: bool,
    /// Before suppression, lying wholly in this statement: the kernel rules'
    /// for the kernels defined here, KL005's for attributes here, the host rules'.
    diags: Vec<Diagnostic>,
    classes: Vec<ClassSummary>,
    directives: Vec<(usize, Directive)>,
    /// How its host code links to other statements; `None` for none (most
    /// statements that only define kernels): a snapshot holds one per statement.
    links: Option<Box<HostLinks>>,
}

/// How a statement's host code links to other statements (`host_links`).
#[derive(Debug, Clone, Default)]
struct HostLinks {
    /// The names the host functions and classes defined here bind (a class as
    /// `class:NAME`; the kernels defined here are in `UnitFacts::kernels`):
    /// what a call elsewhere may reach ([`call_token`]).
    defines: Vec<String>,
    /// The names calls of host code here may reach ([`call_token`]) and the
    /// kernels its `name[grid](...)` calls name; the names of calls inside a loop.
    calls_to: Vec<String>,
    calls_in_loops_to: Vec<String>,
    /// Launch sites here, per kernel name.
    launch_sites: Vec<(String, usize)>,
    /// The launches-per-forward estimates of the time loops here
    /// (`model::launch_estimates`): (the start of the function holding the
    /// loop, `None` for the module scope; kernel; estimate), in the order the
    /// model finds them.
    estimates: Vec<(Option<usize>, String, String)>,
    /// What the host path reads of this statement when it is a host stub (a
    /// plain `def` of host code, see `host_stub_of`); `None` if it cannot be one.
    host_stub: Option<Arc<HostStub>>,
}

static NO_LINKS: HostLinks = HostLinks {
    defines: Vec::new(),
    calls_to: Vec::new(),
    calls_in_loops_to: Vec::new(),
    launch_sites: Vec::new(),
    estimates: Vec::new(),
    host_stub: None,
};

impl UnitFacts {
    fn links(&self) -> &HostLinks {
        self.links.as_deref().unwrap_or(&NO_LINKS)
    }

    /// The names defined here that a call or launch elsewhere may reach: host functions, classes, kernels.
    fn defined_names(&self) -> impl Iterator<Item = &String> {
        self.links().defines.iter().chain(self.kernels.iter().map(|k| &k.name))
    }
}

#[derive(Debug, Clone)]
struct KernelFacts {
    name: String,
    header_range: TextRange,
    has_time_loop: bool,
    /// Persistent unless a Python time loop relaunches it (see `FileModel::kernel_summaries`).
    persistent_shape: bool,
    grid_stride: bool,
    /// What the host rules read of this kernel (`model::kernel_host_view`).
    host_view: Arc<KernelHostView>,
}

/// A statement as [`facts`] reads it: its facts and its foreign diagnostics.
type Fresh = (UnitFacts, Vec<Diagnostic>);

/// Analyses `text` (parsed as `tree`), incrementally from `previous` where it can.
/// Returns the result and the snapshot to pass for the next version.
pub fn analyze(
    text: &Arc<str>,
    tree: &Tree,
    settings: &Settings,
    index: &LineIndex,
    previous: Option<&Snapshot>,
) -> (CheckResult, Snapshot) {
    let snapshot = match previous {
        Some(p) if p.settings == *settings => matching(text, tree, p)
            .and_then(|m| {
                incremental(text, tree, p, &m).or_else(|why| {
                    tracing::debug!("not a kernel edit: {why}");
                    host_incremental(text, tree, p, &m)
                })
            })
            .unwrap_or_else(|why| {
                tracing::debug!("analysing afresh: {why}");
                full(text, tree, settings)
            }),
        _ => full(text, tree, settings),
    };
    (with_syntax_errors(snapshot.result(index), text, tree), snapshot)
}

/// The result of a fresh analysis, without a snapshot.
pub fn check(text: &str, tree: &Tree, settings: &Settings) -> CheckResult {
    with_syntax_errors(full(&Arc::from(text), tree, settings).result(&LineIndex::new(text)), text, tree)
}

/// Adds KL900 where the file does not parse. Read from the tree, not cached
/// per statement: a tree without errors costs one flag check, and both
/// paths read the same tree, so the incremental result stays equal to the full one.
fn with_syntax_errors(mut result: CheckResult, text: &str, tree: &Tree) -> CheckResult {
    let errors = crate::model::syntax::errors(text, tree);
    if !errors.is_empty() {
        result.diagnostics.extend(errors);
        rules::finish(&mut result.diagnostics);
    }
    result
}

fn top_level(tree: &Tree) -> Vec<Node<'_>> {
    let root = tree.root_node();
    let mut cursor = root.walk();
    root.children(&mut cursor).collect()
}

/// Index of the statement containing byte `pos` (its end included).
fn unit_of(ranges: &[TextRange], pos: usize) -> Option<usize> {
    let i = ranges.partition_point(|r| r.start <= pos).checked_sub(1)?;
    (pos <= ranges[i].end).then_some(i)
}

/// Every position a diagnostic refers to.
fn positions(d: &Diagnostic) -> impl Iterator<Item = TextRange> + '_ {
    std::iter::once(d.range)
        .chain(d.related.iter().map(|r| r.range))
        .chain(d.fix.iter().flat_map(|f| f.edits.iter().map(|e| e.range)))
}

/// The statement that holds every position of `d`, if one does.
fn home(ranges: &[TextRange], d: &Diagnostic) -> Option<usize> {
    let u = unit_of(ranges, d.range.start)?;
    positions(d).all(|r| ranges[u].start <= r.start && r.end <= ranges[u].end).then_some(u)
}

/// Files this large build the node index beside the model (`FileModel::build_with_index`)
/// and run the host rules beside the kernel rules; below it a thread's start costs more than it saves.
const PARALLEL_INDEX_BYTES: usize = 32 * 1024;

fn full(text: &Arc<str>, tree: &Tree, settings: &Settings) -> Snapshot {
    full_on(text, tree, settings, text.len() >= PARALLEL_INDEX_BYTES)
}

/// [`full`], on two threads or one.
fn full_on(text: &Arc<str>, tree: &Tree, settings: &Settings, two_threads: bool) -> Snapshot {
    let nodes = top_level(tree);
    // The hygiene rules ask for the node index in a candidate (`ModelNew` at module level).
    let candidate = nodes.iter().any(|n| {
        n.kind() == "class_definition"
            && n.child_by_field_name("name").is_some_and(|m| &text[m.byte_range()] == "ModelNew")
    });
    let model =
        if candidate && two_threads { FileModel::build_with_index(text, tree) } else { FileModel::build(text, tree) };
    let ranges: Vec<TextRange> = nodes.iter().map(|n| range_of(*n)).collect();
    let all: Vec<usize> = (0..nodes.len()).collect();
    // A large file runs the host rules on a second thread while the kernel
    // rules run here, and this thread then takes the host rules not yet
    // started: they only read the model (the kernel rules' focus is theirs alone).
    let ((mut fresh, loose), host) =
        host_rules_beside(&model, settings, two_threads, false, || facts(&model, &nodes, &all, settings, false));
    let mut host_diags = loose;
    for d in host {
        match home(&ranges, &d) {
            Some(u) => fresh[u].0.diags.push(d),
            None => host_diags.push(d),
        }
    }
    let units = fresh
        .into_iter()
        .zip(&ranges)
        .map(|((facts, foreign), range)| Unit { facts: Arc::new(facts), range: *range, delta: 0, foreign })
        .collect();
    Snapshot {
        settings: settings.clone(),
        text: text.clone(),
        estimates: launch_estimates(&model),
        tl_aliases: model.tl_aliases.clone(),
        triton_aliases: model.triton_aliases.clone(),
        units,
        host_diags,
        launch_counts: launch_counts(&model),
        path: Path::Fresh,
        stubs: 0,
        host_stubs: 0,
        candidate: candidate::is_candidate(&model).then(|| Arc::new(candidate::imports(&model))),
        context: host_context(&model),
        linked: false,
        walk_again: Vec::new(),
        builds: 0,
    }
}

/// The statements `selected` (indexes into `nodes`, ascending) as `model`
/// (which walked at least them) sees them, without host-rule diagnostics;
/// and KL005 diagnostics that fall in no statement. With `link`, also how
/// their host code links to other statements and what a host stub of each
/// keeps (`Snapshot::linked`).
fn facts(
    model: &FileModel,
    nodes: &[Node],
    selected: &[usize],
    settings: &Settings,
    link: bool,
) -> (Vec<Fresh>, Vec<Diagnostic>) {
    let ranges: Vec<TextRange> = nodes.iter().map(|n| range_of(*n)).collect();
    let mut slot: HashMap<usize, usize> = HashMap::with_capacity(selected.len());
    let mut units: Vec<Fresh> = selected
        .iter()
        .enumerate()
        .map(|(s, &i)| {
            slot.insert(i, s);
            let facts = UnitFacts {
                kind: nodes[i].kind_id(),
                error_shape: nodes[i].has_error().then(|| shape(nodes[i])),
                neutral: true,
                kernels: Vec::new(),
                helper_callees: Vec::new(),
                launched: Vec::new(),
                module_assigns: false,
                diags: Vec::new(),
                classes: Vec::new(),
                directives: Vec::new(),
                links: None,
            };
            (facts, Vec::new())
        })
        .collect();
    let unit = |pos: usize| unit_of(&ranges, pos).and_then(|i| slot.get(&i).copied());
    let mut loose = Vec::new();

    // Kernels: the kernel rules one kernel at a time, so each diagnostic belongs to its kernel.
    let mut produced = Vec::new();
    for (ki, k) in model.kernels.iter().enumerate() {
        let Some(u) = unit(k.node.start_byte()) else { continue };
        let (facts, foreign) = &mut units[u];
        facts.kernels.push(KernelFacts {
            name: k.name.clone(),
            header_range: k.header_range,
            has_time_loop: !k.time_loops(model).is_empty(),
            persistent_shape: k.time_loops(model).iter().any(|&t| k.is_recurrence(t, model)),
            grid_stride: (0..k.loops.len()).any(|l| k.is_grid_stride(l, model.src)),
            host_view: Arc::new(kernel_host_view(model, k, link)),
        });
        for c in k.calls.iter().filter(|c| c.tl_name.is_none()) {
            if !facts.helper_callees.contains(&c.callee) {
                facts.helper_callees.push(c.callee.clone());
            }
        }
        model.set_focus(Some((ki, ki + 1)));
        rules::run_reach(model, settings, Reach::Kernel, &mut produced);
        let here = ranges[selected[u]];
        for d in produced.drain(..) {
            if positions(&d).all(|r| here.start <= r.start && r.end <= here.end) {
                facts.diags.push(d);
            } else {
                foreign.push(d);
            }
        }
    }
    model.set_focus(None);
    // KL005 reports on the attribute itself, inside its statement.
    let mut attr_diags = Vec::new();
    rules::run_reach(model, settings, Reach::TlAttr, &mut attr_diags);
    for d in attr_diags {
        match unit_of(&ranges, d.range.start) {
            Some(i) => {
                if let Some(&u) = slot.get(&i) {
                    match home(&ranges, &d) {
                        Some(_) => units[u].0.diags.push(d),
                        None => units[u].1.push(d),
                    }
                }
            }
            None => loose.push(d),
        }
    }
    // Host code.
    let mut host = |pos: usize| {
        if let Some(u) = unit(pos) {
            units[u].0.neutral = false;
        }
    };
    // Imports, wherever they are (also in a statement that does not parse):
    // the kernel rules read the `triton` aliases, the hygiene rules every import.
    for &i in selected {
        if model.src.get(nodes[i].byte_range()).is_some_and(has_import_keyword) {
            host(nodes[i].start_byte());
        }
    }
    for f in &model.host_fns[1..] {
        host(f.node.start_byte());
    }
    for c in &model.classes {
        host(c.node.start_byte());
    }
    let module = &model.host_fns[0];
    for n in module
        .loops
        .iter()
        .map(|l| l.node)
        .chain(module.calls.iter().map(|c| c.node))
        .chain(module.syncs.iter().map(|s| s.node))
        .chain(module.assigns.iter().map(|a| a.node))
    {
        host(n.start_byte());
    }
    for r in &model.launch_candidates {
        host(r.start);
    }
    for a in &module.assigns {
        if let Some(u) = unit(a.node.start_byte()) {
            units[u].0.module_assigns = true;
        }
    }
    for l in &model.launches {
        if let Some(u) = unit(l.node.start_byte()) {
            if !units[u].0.launched.contains(&l.kernel) {
                units[u].0.launched.push(l.kernel.clone());
            }
        }
    }
    for c in &model.classes {
        if let Some(u) = unit(c.node.start_byte()) {
            units[u].0.classes.push(ClassSummary { name: c.name.clone(), range: c.name_range });
        }
    }
    for (pos, d) in &model.directives {
        if let Some(u) = unit(*pos) {
            units[u].0.directives.push((*pos, d.clone()));
        }
    }
    if link {
        host_links(model, &mut units, &unit);
        let candidate = candidate::is_candidate(model);
        for (s, &i) in selected.iter().enumerate() {
            if let Some(stub) = host_stub_of(model, nodes[i], &units[s].0, candidate) {
                units[s].0.links.get_or_insert_with(Default::default).host_stub = Some(stub);
            }
        }
    }
    (units, loose)
}

/// What a call's callee key (`HCall::callee`) may reach, as a name a
/// statement defines (`UnitFacts::defines`): `helper` and `.method` a
/// function or method of that name, `Class.apply` and `Class()` the class.
fn call_token(callee: &str) -> String {
    if let Some(class) = callee.strip_suffix(".apply").or_else(|| callee.strip_suffix("()")) {
        return format!("class:{class}");
    }
    callee.trim_start_matches('.').to_string()
}

/// The host-code links of the statements `model` walked: the names each
/// defines and calls, its launch sites and its time loops' estimates.
fn host_links(model: &FileModel, units: &mut [Fresh], unit: &impl Fn(usize) -> Option<usize>) {
    let mut links: Vec<HostLinks> = vec![HostLinks::default(); units.len()];
    let push = |list: &mut Vec<String>, token: String| {
        if !list.contains(&token) {
            list.push(token);
        }
    };
    for (f, func) in model.host_fns.iter().enumerate() {
        if f > 0 {
            if let Some(u) = unit(func.node.start_byte()) {
                push(&mut links[u].defines, func.name.clone());
            }
        }
        for call in &func.calls {
            let Some(u) = unit(call.node.start_byte()) else { continue };
            let token = call_token(&call.callee);
            if !call.loops.is_empty() {
                push(&mut links[u].calls_in_loops_to, token.clone());
            }
            push(&mut links[u].calls_to, token);
        }
    }
    for c in &model.classes {
        if let Some(u) = unit(c.node.start_byte()) {
            push(&mut links[u].defines, format!("class:{}", c.name));
        }
    }
    // `name[grid](...)` calls: whether a launch site is a kernel's depends on
    // the kernel names the file defines.
    for r in &model.launch_candidates {
        let Some(u) = unit(r.start) else { continue };
        let name = model.src.get(r.start..r.end).and_then(|t| t.split('[').next()).unwrap_or_default().trim();
        push(&mut links[u].calls_to, name.to_string());
    }
    for l in &model.launches {
        if let Some(u) = unit(l.node.start_byte()) {
            let sites = &mut links[u].launch_sites;
            match sites.iter_mut().find(|(k, _)| *k == l.kernel) {
                Some((_, n)) => *n += 1,
                None => sites.push((l.kernel.clone(), 1)),
            }
        }
    }
    for tl in model.time_loop_launches() {
        let func = &model.host_fns[tl.host_fn];
        let Some(u) = unit(func.loops[tl.loop_index].node.start_byte()) else { continue };
        let start = (tl.host_fn > 0).then(|| func.node.start_byte());
        for (li, _) in &tl.launches {
            links[u].estimates.push((start, model.launches[*li].kernel.clone(), tl.estimate.clone()));
        }
    }
    for (u, mut l) in links.into_iter().enumerate() {
        let empty = l.defines.is_empty()
            && l.calls_to.is_empty()
            && l.calls_in_loops_to.is_empty()
            && l.launch_sites.is_empty()
            && l.estimates.is_empty();
        if !empty {
            l.defines.shrink_to_fit();
            l.calls_to.shrink_to_fit();
            l.calls_in_loops_to.shrink_to_fit();
            l.launch_sites.shrink_to_fit();
            l.estimates.shrink_to_fit();
            units[u].0.links = Some(Box::new(l));
        }
    }
}

/// The statement `node` as a host stub, if it can be one: a plain top-level
/// `def` of host code (no decorator, no nested definition, no kernel, no
/// class, no import, no syntax error, no module-level name assigned; not
/// `get_inputs` or `get_init_inputs`, which KL106 reads the calls of), with
/// what other functions read of it.
fn host_stub_of(model: &FileModel, node: Node, facts: &UnitFacts, candidate: bool) -> Option<Arc<HostStub>> {
    if node.kind() != "function_definition"
        || facts.error_shape.is_some()
        || !facts.kernels.is_empty()
        || !facts.classes.is_empty()
        || facts.module_assigns
        || model.src.get(node.byte_range()).is_none_or(has_import_keyword)
    {
        return None;
    }
    let range = range_of(node);
    // Host functions are in document order (after the module scope): this
    // one, and no other inside it.
    let fns = &model.host_fns[1..];
    let at = fns.partition_point(|h| h.node.start_byte() < range.start);
    let func = fns.get(at).filter(|h| h.node == node)?;
    let nested = fns.get(at + 1).is_some_and(|h| h.node.start_byte() < range.end);
    if nested || matches!(func.name.as_str(), "get_inputs" | "get_init_inputs") {
        return None;
    }
    let start = node.start_byte();
    let rel = |at: usize| u32::try_from(at - start).ok();
    // Only the calls that reach a function of this file: one that reaches
    // none now (`range(...)`) could only reach a definition a later edit
    // adds, and a stub that calls a name a changed statement defines is walked.
    let f = model.host_fns.len() - fns.len() + at;
    let calls = func
        .calls
        .iter()
        .filter(|c| !model.callees(f, c).is_empty())
        .map(|c| Some((rel(c.node.start_byte())?, rel(c.node.end_byte())?, c.callee.clone())))
        .collect::<Option<Vec<_>>>()?;
    // `candidate::reachable` reads the `X.apply` calls of a candidate's functions from the node index.
    let apply_classes = if candidate {
        crate::model::inside(&model.nodes().calls, node)
            .filter_map(|n| n.child_by_field_name("function"))
            .filter_map(|callee| model.text(callee).strip_suffix(".apply").map(str::to_string))
            .collect()
    } else {
        Vec::new()
    };
    let candidates = &model.launch_candidates;
    let first = candidates.partition_point(|r| r.start < range.start);
    let params = crate::model::host_param_ranges(node)
        .into_iter()
        .map(|r| Some((rel(r.start)?, rel(r.end)?)))
        .collect::<Option<Vec<_>>>()?;
    if params.len() != func.params.len()
        || model.src.get(func.name_range.start..func.name_range.end) != Some(&func.name)
    {
        return None;
    }
    Some(Arc::new(HostStub {
        name_range: (rel(func.name_range.start)?, rel(func.name_range.end)?),
        params: params.into(),
        calls: calls.into(),
        launches: !func.launches.is_empty(),
        launch_candidates: candidates[first..]
            .iter()
            .take_while(|r| r.start < range.end)
            .any(|r| range.contains_range(*r)),
        apply_classes: apply_classes.into(),
        calls_in_loops_to: facts.links().calls_in_loops_to.clone().into(),
    }))
}

/// What both incremental paths start from: the statements now, the imports
/// (which must be as they were), and which statements the edit left as they were.
struct Matching<'t> {
    nodes: Vec<Node<'t>>,
    aliases: (Vec<String>, Vec<String>),
    /// For each statement now, the old one it matches.
    matched: Vec<Option<usize>>,
    /// For each old statement, the new one.
    old_to_new: Vec<Option<usize>>,
    /// The old statements the edit changed.
    changed_old: Vec<usize>,
}

impl Matching<'_> {
    /// Cached diagnostics of `prev`, moved with their statements to where
    /// those are now; an error if a position lies in a changed statement.
    fn moved(&self, prev: &Snapshot, list: &[Diagnostic]) -> Result<Vec<Diagnostic>, &'static str> {
        let map = |pos: usize| -> Option<usize> {
            let o = prev.units.partition_point(|u| u.range.start <= pos).checked_sub(1)?;
            let old = prev.units[o].range;
            let n = self.old_to_new[o].filter(|_| pos <= old.end)?;
            Some(pos - old.start + self.nodes[n].start_byte())
        };
        list.iter()
            .map(|d| remap(d, &map))
            .collect::<Option<Vec<_>>>()
            .ok_or("a cached position lies in a changed statement")
    }
}

fn matching<'t>(text: &str, tree: &'t Tree, prev: &Snapshot) -> Result<Matching<'t>, &'static str> {
    let nodes = top_level(tree);
    let aliases = imports_of(&nodes, text);
    if aliases.0 != prev.tl_aliases || aliases.1 != prev.triton_aliases {
        return Err("the imports changed");
    }
    let (matched, old_to_new) = match_units(prev, &nodes, text);
    let changed_old: Vec<usize> = (0..prev.units.len()).filter(|&o| old_to_new[o].is_none()).collect();
    Ok(Matching { nodes, aliases, matched, old_to_new, changed_old })
}

fn incremental(text: &Arc<str>, tree: &Tree, prev: &Snapshot, m: &Matching) -> Result<Snapshot, &'static str> {
    let Matching { nodes, aliases, matched, changed_old, .. } = m;
    let new_len = nodes.len();
    if changed_old.iter().any(|&o| !prev.units[o].facts.neutral) {
        return Err("a changed statement had host code");
    }
    // In a candidate the hygiene rules also report in kernels (KL103 on a
    // kernel's name) and read inside them (KL107 and KL108: calls, attributes
    // and assignments anywhere): a changed statement with a hygiene finding,
    // before or after, is analysed afresh.
    if prev.candidate.is_some()
        && changed_old.iter().any(|&o| prev.units[o].facts.diags.iter().any(|d| rules::is_hygiene(&d.code)))
    {
        return Err("a changed statement had a hygiene finding");
    }
    let old_names: Vec<&str> =
        changed_old.iter().flat_map(|&o| prev.units[o].facts.kernels.iter().map(|k| k.name.as_str())).collect();

    // Re-checked: the changed statements, those whose kernels call a changed
    // kernel, and the helpers the changed kernels call, directly or through
    // other helpers (KL004 reads what a helper's callers pass).
    let changed_names: HashSet<&str> = old_names.iter().copied().collect();
    let mut called: HashSet<&str> =
        changed_old.iter().flat_map(|&o| prev.units[o].facts.helper_callees.iter().map(String::as_str)).collect();
    loop {
        let more: Vec<&str> = prev
            .units
            .iter()
            .filter(|u| u.facts.kernels.iter().any(|k| called.contains(k.name.as_str())))
            .flat_map(|u| u.facts.helper_callees.iter().map(String::as_str))
            .filter(|c| !called.contains(c))
            .collect();
        if more.is_empty() {
            break;
        }
        called.extend(more);
    }
    let recheck: Vec<usize> = (0..new_len)
        .filter(|&i| match matched[i] {
            None => true,
            Some(o) => {
                let u = &prev.units[o].facts;
                u.helper_callees.iter().any(|c| changed_names.contains(c.as_str()))
                    || u.kernels.iter().any(|k| called.contains(k.name.as_str()))
            }
        })
        .collect();
    // The kernels that call a re-checked kernel, directly or through helpers, are read too.
    let mut callers: HashSet<&str> = changed_names.clone();
    for &i in &recheck {
        if let Some(o) = matched[i] {
            callers.extend(prev.units[o].facts.kernels.iter().map(|k| k.name.as_str()));
        }
    }
    loop {
        let more: Vec<&str> = prev
            .units
            .iter()
            .filter(|u| u.facts.helper_callees.iter().any(|c| callers.contains(c.as_str())))
            .flat_map(|u| u.facts.kernels.iter().map(|k| k.name.as_str()))
            .filter(|k| !callers.contains(k))
            .collect();
        if more.is_empty() {
            break;
        }
        callers.extend(more);
    }
    // What their kernel rules read: helpers, launch sites, module-level assignments.
    // The changed statements must keep their kernel names (checked below), so
    // those are known; their helpers are taken from before and checked after.
    let mut names: HashSet<&str> = changed_names.clone();
    let mut helpers: HashSet<String> = HashSet::new();
    for &o in changed_old {
        helpers.extend(prev.units[o].facts.helper_callees.iter().cloned());
    }
    for &i in &recheck {
        if let Some(o) = matched[i] {
            names.extend(prev.units[o].facts.kernels.iter().map(|k| k.name.as_str()));
            helpers.extend(prev.units[o].facts.helper_callees.iter().cloned());
        }
    }
    let mut attempt = 0;
    let (fresh, loose) = loop {
        let walk: Vec<Node> = (0..new_len)
            .filter(|&i| match matched[i] {
                None => true,
                Some(o) => {
                    let u = &prev.units[o].facts;
                    recheck.binary_search(&i).is_ok()
                        || u.module_assigns
                        || u.kernels.iter().any(|k| callers.contains(k.name.as_str()))
                        || u.kernels.iter().any(|k| helpers.contains(&k.name))
                        || u.launched.iter().any(|k| names.contains(k.as_str()))
                }
            })
            .map(|i| nodes[i])
            .collect();
        let model = FileModel::build_partial(text, tree, &walk, aliases);
        let (fresh, loose) = facts(&model, nodes, &recheck, &prev.settings, prev.linked);
        // The changed statements as they are now: still no host code, the same kernels.
        let now: Vec<&UnitFacts> =
            recheck.iter().zip(&fresh).filter(|(i, _)| matched[**i].is_none()).map(|(_, (f, _))| f).collect();
        if now.iter().any(|f| !f.neutral) {
            return Err("a changed statement has host code");
        }
        if !now.iter().flat_map(|f| f.kernels.iter().map(|k| k.name.as_str())).eq(old_names.iter().copied()) {
            return Err("kernels were added, removed or renamed");
        }
        // The host rules read a kernel's parameters and the pointers it stores
        // to and loads from (whether a launching loop carries state, KL001).
        let old_views = changed_old.iter().flat_map(|&o| prev.units[o].facts.kernels.iter().map(|k| &k.host_view));
        if !now.iter().flat_map(|f| f.kernels.iter().map(|k| &k.host_view)).eq(old_views) {
            return Err("a kernel's parameters or the pointers it loads and stores changed");
        }
        let missing: Vec<String> = fresh
            .iter()
            .flat_map(|(f, _)| f.helper_callees.iter())
            .filter(|c| !helpers.contains(*c))
            .cloned()
            .collect();
        if missing.is_empty() {
            break (fresh, loose);
        }
        // A kernel now calls a name it did not call before: read again with those helpers.
        attempt += 1;
        if attempt > 1 {
            return Err("the helpers did not settle");
        }
        helpers.extend(missing);
    };
    if !loose.is_empty() {
        return Err("a diagnostic outside every statement");
    }
    if let Some(imports) = &prev.candidate {
        let changed_now: Vec<usize> = (0..new_len).filter(|&i| matched[i].is_none()).collect();
        // KL107 and KL108 report on single nodes, given the file's imports.
        let src = text.as_ref();
        for &i in &changed_now {
            if !node_local_findings(src, imports, nodes[i]).is_empty() {
                return Err("a changed statement has a hygiene finding");
            }
        }
    }
    // A changed kernel that now calls a helper it did not call before changes
    // what that helper's callers pass: the helper must have been re-checked.
    let rechecked: HashSet<&str> = recheck
        .iter()
        .filter_map(|&i| matched[i])
        .flat_map(|o| prev.units[o].facts.kernels.iter().map(|k| k.name.as_str()))
        .collect();
    let new_callees = recheck
        .iter()
        .zip(&fresh)
        .filter(|(i, _)| matched[**i].is_none())
        .flat_map(|(_, (f, _))| f.helper_callees.iter());
    for c in new_callees {
        let defined_elsewhere =
            (0..new_len).any(|i| matched[i].is_some_and(|o| prev.units[o].facts.kernels.iter().any(|k| &k.name == c)));
        if defined_elsewhere && !rechecked.contains(c.as_str()) {
            return Err("a changed kernel calls a helper it did not call");
        }
    }

    // Everything else moves with its statement.
    let mut fresh = fresh.into_iter();
    let mut units = Vec::with_capacity(new_len);
    for (i, node) in nodes.iter().enumerate() {
        let range = range_of(*node);
        if recheck.binary_search(&i).is_ok() {
            let (mut facts, foreign) = fresh.next().ok_or("a statement was not re-read")?;
            // The host rules' diagnostics of a re-checked statement that did not change stay.
            if let Some(o) = matched[i] {
                let old = &prev.units[o];
                let moved = old.delta_at(range.start);
                let host = old.facts.diags.iter().filter(|d| is_host_diag(d));
                facts.diags.extend(host.map(|d| shifted(d, moved)));
            }
            units.push(Unit { facts: Arc::new(facts), range, delta: 0, foreign });
            continue;
        }
        let old = &prev.units[matched[i].ok_or("a statement was not matched")?];
        units.push(Unit {
            facts: old.facts.clone(),
            range,
            delta: old.delta_at(range.start),
            foreign: m.moved(prev, &old.foreign)?,
        });
    }
    Ok(Snapshot {
        settings: prev.settings.clone(),
        text: text.clone(),
        tl_aliases: aliases.0.clone(),
        triton_aliases: aliases.1.clone(),
        units,
        host_diags: m.moved(prev, &prev.host_diags)?,
        estimates: prev.estimates.clone(),
        launch_counts: prev.launch_counts.clone(),
        path: Path::Kernels,
        stubs: 0,
        host_stubs: 0,
        candidate: prev.candidate.clone(),
        context: prev.context.clone(),
        linked: prev.linked,
        walk_again: prev.walk_again.iter().filter_map(|&o| m.old_to_new[o]).collect(),
        builds: 0,
    })
}

/// The analysis of an edit the kernel path refuses: host code (a launching
/// helper, `forward`, a class), or a kernel statement whose edit reaches the
/// host rules (a renamed kernel, its pointers, a hygiene finding in it). The
/// host rules read the whole file, so they run again, on a model
/// in which the statements that only define kernels, and whose kernel rules
/// read nothing the edit changed, are stubs: their kernels' headers are
/// read, their bodies are not, and the host-side questions about them are
/// answered from the views this snapshot kept ([`FileModel::build_stubbed`]).
/// Those statements keep their kernel-rule and KL005 findings, and their
/// KL107/KL108 findings (each depends on its node and the file's imports
/// alone). Every other statement is read afresh: the changed ones, and the
/// kernels they define or launch (before or after) with every kernel linked
/// to those by a `@triton.jit` helper call.
///
/// Host functions the edit cannot reach are host stubs (`host_stubs`): a
/// plain top-level `def` that reaches, through calls by name, nothing a
/// changed statement defines, is not called in a loop by one, launches no
/// kernel that is walked, and whose findings read nothing else the edit
/// changed (`host_context`). Its header and its calls to functions of this
/// file come from the snapshot (`model::HostStub`); it keeps its findings,
/// those that reach into other statements included. A rule that asks a
/// stub what it does not keep marks the model (`FileModel::read_a_stub`), and
/// the statements are read again with that stub walked.
///
/// Refused (the file is analysed afresh) when a changed statement, before or
/// after, assigns a module-level name or holds the word `import`, or when the
/// file stops or starts being a candidate.
fn host_incremental(text: &Arc<str>, tree: &Tree, prev: &Snapshot, m: &Matching) -> Result<Snapshot, &'static str> {
    let Matching { nodes, aliases, matched, changed_old, .. } = m;
    let (old_len, new_len) = (prev.units.len(), nodes.len());
    for &o in changed_old {
        let u = &prev.units[o];
        if u.facts.module_assigns {
            return Err("a changed statement assigned module-level names");
        }
        if prev.text.get(u.range.start..u.range.end).is_none_or(has_import_keyword) {
            return Err("a changed statement imported");
        }
    }
    if (0..new_len).any(|i| matched[i].is_none() && text.get(nodes[i].byte_range()).is_none_or(has_import_keyword)) {
        return Err("a changed statement imports");
    }
    // A statement whose kernels can be stubs: it defines kernels and nothing
    // else (no host code, no syntax error), and its host-rule findings are
    // the node-local ones.
    let stubbable: Vec<bool> = prev
        .units
        .iter()
        .map(|u| {
            let f = &u.facts;
            f.neutral
                && !f.kernels.is_empty()
                && f.error_shape.is_none()
                && f.diags.iter().all(|d| !is_host_diag(d) || is_node_local(&d.code))
        })
        .collect();
    // The kernels a changed statement defined, and those it launched (their
    // kernel rules read their launch sites): those are walked and checked,
    // with every kernel they call or that calls them, and every kernel of a
    // statement that is not a stub.
    let mut walked: HashSet<String> = changed_old
        .iter()
        .flat_map(|&o| {
            let f = &prev.units[o].facts;
            f.launched.iter().cloned().chain(f.kernels.iter().map(|k| k.name.clone()))
        })
        .collect();
    let mut defined: HashSet<String> =
        prev.units.iter().flat_map(|u| u.facts.kernels.iter().map(|k| k.name.clone())).collect();
    // Host stubs (`host_stubs`): what the changed statements define and call
    // inside loops, before the edit and, once read, after it; the statements
    // that must be walked all the same; and whether stubs are used at all.
    let mut changed_defines: HashSet<String> =
        changed_old.iter().flat_map(|&o| prev.units[o].facts.defined_names().cloned()).collect();
    let mut changed_loop_calls: HashSet<String> =
        changed_old.iter().flat_map(|&o| prev.units[o].facts.links().calls_in_loops_to.iter().cloned()).collect();
    // Statements a rule needed walked last time (`Snapshot::walk_again`) are
    // walked from the start (an RNN's time loop reads its step helper on every
    // edit), unless a changed statement called something in a loop: the
    // reason may be gone, and a stub that is read is found again.
    let mut forced: HashSet<usize> = HashSet::new();
    if changed_loop_calls.is_empty() {
        forced.extend(prev.walk_again.iter().filter_map(|&o| m.old_to_new[o]));
    }
    // Host stubs need the previous snapshot's links; the first host-path
    // analysis after a fresh one reads every statement and makes them.
    let mut host_stubs_on = prev.linked;
    let mut attempt = 0;
    loop {
        attempt += 1;
        if attempt > 6 {
            return Err("the statements to read did not settle");
        }
        for o in matched.iter().flatten().filter(|&&o| !stubbable[o]) {
            walked.extend(prev.units[*o].facts.kernels.iter().map(|k| k.name.clone()));
        }
        // Close `walked` over helper calls, both ways: a statement is linked to
        // the kernels it defines and to the kernels of this file its kernels call
        // (calls to names no kernel here defines, `range` or a library's
        // function, link nothing); each statement is visited once.
        let linked = |f: &UnitFacts| -> Vec<String> {
            let helpers = f.helper_callees.iter().filter(|c| defined.contains(*c));
            f.kernels.iter().map(|k| &k.name).chain(helpers).cloned().collect()
        };
        let links: Vec<Vec<String>> = prev.units.iter().map(|u| linked(&u.facts)).collect();
        let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
        for (o, names) in links.iter().enumerate() {
            for n in names {
                by_name.entry(n.as_str()).or_default().push(o);
            }
        }
        let mut queue: Vec<String> = walked.iter().cloned().collect();
        let mut visited = vec![false; old_len];
        while let Some(name) = queue.pop() {
            for &o in by_name.get(name.as_str()).into_iter().flatten() {
                if std::mem::replace(&mut visited[o], true) {
                    continue;
                }
                for n in &links[o] {
                    if walked.insert(n.clone()) {
                        queue.push(n.clone());
                    }
                }
            }
        }
        let stub: Vec<bool> = (0..new_len)
            .map(|i| {
                matched[i].is_some_and(|o| {
                    stubbable[o] && !prev.units[o].facts.kernels.iter().any(|k| walked.contains(&k.name))
                })
            })
            .collect();
        let views: Vec<Vec<Arc<KernelHostView>>> = (0..new_len)
            .map(|i| match matched[i].filter(|_| stub[i]) {
                Some(o) => prev.units[o].facts.kernels.iter().map(|k| k.host_view.clone()).collect(),
                None => Vec::new(),
            })
            .collect();
        let host_stub = if host_stubs_on {
            host_stubs(prev, matched, &changed_defines, &changed_loop_calls, &walked, &forced)
        } else {
            vec![false; new_len]
        };
        let units: Vec<crate::model::PartialUnit> = (0..new_len)
            .map(|i| {
                let how = if stub[i] {
                    Some(Stub::Kernels(views[i].as_slice()))
                } else if host_stub[i] {
                    matched[i].and_then(|o| prev.units[o].facts.links().host_stub.as_ref()).map(Stub::Host)
                } else {
                    None
                };
                (nodes[i], how)
            })
            .collect();
        // A second thread pays for itself only on enough text walked (stubs are not).
        let walked_bytes: usize =
            units.iter().filter(|(_, how)| how.is_none()).map(|(n, _)| n.byte_range().len()).sum();
        let two_threads = walked_bytes >= PARALLEL_INDEX_BYTES;
        let model = FileModel::build_stubbed(text, tree, &units, aliases, two_threads)
            .ok_or("a stub's kernels are not as they were")?;
        let ranges: Vec<TextRange> = nodes.iter().map(|n| range_of(*n)).collect();
        let read: Vec<usize> = (0..new_len).filter(|&i| !stub[i] && !host_stub[i]).collect();
        let (fresh, loose) = facts(&model, nodes, &read, &prev.settings, true);
        // The changed statements as they are now: no module-level names; what
        // they launch, and the kernels their kernels call, walked; a kernel
        // they define now that a stub calls, or whose name a stub defines too,
        // walked with that stub.
        let stub_names: HashSet<&str> = (0..new_len)
            .filter(|&i| stub[i])
            .filter_map(|i| matched[i])
            .flat_map(|o| {
                let f = &prev.units[o].facts;
                f.helper_callees.iter().chain(f.kernels.iter().map(|k| &k.name)).map(String::as_str)
            })
            .collect();
        let mut missing = Vec::new();
        for (&i, (f, _)) in read.iter().zip(&fresh) {
            if matched[i].is_none() {
                if f.module_assigns {
                    return Err("a changed statement assigns module-level names");
                }
                missing.extend(f.launched.iter().filter(|k| !walked.contains(*k)).cloned());
                missing
                    .extend(f.helper_callees.iter().filter(|c| defined.contains(*c) && !walked.contains(*c)).cloned());
                for k in &f.kernels {
                    if !walked.contains(&k.name) && stub_names.contains(k.name.as_str()) {
                        missing.push(k.name.clone());
                    }
                }
            }
        }
        // The names the changed statements define and call in loops now: a
        // host stub that reaches one, or is one, is walked after all.
        let mut more_names = false;
        for (&i, (f, _)) in read.iter().zip(&fresh) {
            if matched[i].is_none() {
                for d in f.defined_names() {
                    more_names |= changed_defines.insert(d.clone());
                }
                for c in &f.links().calls_in_loops_to {
                    more_names |= changed_loop_calls.insert(c.clone());
                }
            }
        }
        // A kernel walked now whose launch site is in a host stub: its kernel rules read that site.
        let walked_now: HashSet<&str> =
            model.kernels.iter().filter(|k| k.stub.is_none()).map(|k| k.name.as_str()).collect();
        let launching_stubs: Vec<usize> = (0..new_len)
            .filter(|&i| host_stub[i])
            .filter(|&i| {
                matched[i].is_some_and(|o| prev.units[o].facts.launched.iter().any(|k| walked_now.contains(k.as_str())))
            })
            .collect();
        let any_host_stub = host_stub.iter().any(|s| *s);
        if !missing.is_empty() || (more_names && any_host_stub) || !launching_stubs.is_empty() {
            defined.extend(missing.iter().cloned());
            walked.extend(missing);
            forced.extend(launching_stubs);
            continue;
        }
        let candidate = candidate::is_candidate(&model);
        if candidate != prev.candidate.is_some() {
            return Err("the file became, or stopped being, a candidate");
        }
        // KL107 and KL108 are asked below, of the changed statements only.
        let host = host_rules(&model, &prev.settings, two_threads, true);
        let context = host_context(&model);
        // A rule needed what a host stub does not keep: that stub is walked
        // (no host stubs after three such retries, or when what the host
        // stubs' own findings read of the candidate changed).
        let read_stubs = model.stubs_read();
        if any_host_stub && !read_stubs.is_empty() {
            if attempt < 4 {
                forced.extend(read_stubs.iter().filter_map(|&at| unit_of(&ranges, at)));
            } else {
                host_stubs_on = false;
            }
            continue;
        }
        if any_host_stub && (context != prev.context || context.stores) {
            host_stubs_on = false;
            continue;
        }
        let mut slot = vec![usize::MAX; new_len];
        for (s, &i) in read.iter().enumerate() {
            slot[i] = s;
        }
        let mut fresh = fresh;
        let mut host_diags = loose;
        let mut on_stubs: HashMap<usize, Vec<Diagnostic>> = HashMap::new();
        // A host stub keeps the host rules' findings that start in it (the
        // model holds only its header): those lying wholly in it in its
        // facts, the others moved from the previous snapshot.
        let in_host_stub = |pos: usize| unit_of(&ranges, pos).is_some_and(|i| host_stub[i]);
        for d in host {
            match home(&ranges, &d) {
                Some(i) if host_stub[i] => {}
                Some(i) if stub[i] => on_stubs.entry(i).or_default().push(d),
                Some(i) => fresh[slot[i]].0.diags.push(d),
                None if in_host_stub(d.range.start) => {}
                None => host_diags.push(d),
            }
        }
        if any_host_stub {
            let of_stubs: Vec<Diagnostic> = prev
                .host_diags
                .iter()
                .filter(|d| {
                    let o = prev.units.partition_point(|u| u.range.start <= d.range.start).checked_sub(1);
                    o.filter(|&o| d.range.start <= prev.units[o].range.end)
                        .and_then(|o| m.old_to_new[o])
                        .is_some_and(|i| host_stub[i])
                })
                .cloned()
                .collect();
            host_diags.extend(m.moved(prev, &of_stubs)?);
        }
        // KL107 and KL108 report on single nodes, given the file's imports
        // (the same on this path): a statement read as it was keeps its
        // findings, moved with it; a changed one is asked.
        if let Some(imports) = &prev.candidate {
            let enabled = |code: &str| prev.settings.enabled(code);
            for (s, &i) in read.iter().enumerate() {
                let found = match matched[i] {
                    Some(o) => {
                        let old = &prev.units[o];
                        let delta = old.delta_at(ranges[i].start);
                        old.facts.diags.iter().filter(|d| is_node_local(&d.code)).map(|d| shifted(d, delta)).collect()
                    }
                    None => node_local_findings(text, imports, nodes[i]),
                };
                fresh[s].0.diags.extend(found.into_iter().filter(|d| enabled(&d.code)));
            }
        }
        let mut fresh = fresh.into_iter();
        let mut out = Vec::with_capacity(new_len);
        for (i, node) in nodes.iter().enumerate() {
            let range = range_of(*node);
            if host_stub[i] {
                let old = &prev.units[matched[i].ok_or("a host stub was not matched")?];
                let delta = old.delta_at(range.start);
                out.push(Unit { facts: old.facts.clone(), range, delta, foreign: m.moved(prev, &old.foreign)? });
                continue;
            }
            if !stub[i] {
                let (facts, foreign) = fresh.next().ok_or("a statement was not re-read")?;
                out.push(Unit { facts: Arc::new(facts), range, delta: 0, foreign });
                continue;
            }
            let old = &prev.units[matched[i].ok_or("a stub was not matched")?];
            let delta = old.delta_at(range.start);
            let foreign = m.moved(prev, &old.foreign)?;
            // A kernel stub from before the first host-path analysis keeps no
            // header: the model read it, and its view keeps it from now on.
            let old_facts = if old.facts.kernels.iter().any(|k| k.host_view.header.is_none()) {
                let mut facts = (*old.facts).clone();
                let here: Vec<&crate::model::Kernel> =
                    model.kernels.iter().filter(|k| range.contains_range(range_of(k.node))).collect();
                if here.len() == facts.kernels.len() {
                    for (kf, k) in facts.kernels.iter_mut().zip(here) {
                        let mut view = (*kf.host_view).clone();
                        view.header = Some(Box::new(crate::model::kernel_header(k)));
                        kf.host_view = Arc::new(view);
                    }
                }
                Arc::new(facts)
            } else {
                old.facts.clone()
            };
            let facts = match on_stubs.remove(&i) {
                None => old_facts,
                // A host rule reported in a stub (on its header): its findings, at the positions they were read at.
                Some(found) => {
                    let mut facts = (*old_facts).clone();
                    facts.diags.extend(found.iter().map(|d| shifted(d, -delta)));
                    Arc::new(facts)
                }
            };
            out.push(Unit { facts, range, delta, foreign });
        }
        return Ok(Snapshot {
            settings: prev.settings.clone(),
            text: text.clone(),
            estimates: merged_estimates(&out),
            tl_aliases: aliases.0.clone(),
            triton_aliases: aliases.1.clone(),
            launch_counts: merged_launch_counts(&out),
            units: out,
            host_diags,
            path: Path::Host,
            stubs: stub.iter().filter(|s| **s).count(),
            host_stubs: host_stub.iter().filter(|s| **s).count(),
            candidate: candidate.then(|| Arc::new(candidate::imports(&model))),
            context,
            linked: true,
            walk_again: {
                let mut again: Vec<usize> = forced.iter().copied().collect();
                again.sort_unstable();
                again
            },
            builds: attempt,
        });
    }
}

/// Which statements now are host stubs (`Stub::Host`) on the host path: a
/// statement that can be one (`UnitFacts::host_stub`), left as it was by the
/// edit, that the host rules need only its header and calls of, and whose
/// own host-rule findings the edit cannot change:
///
/// - it does not reach, through calls by name, a name a changed statement
///   defines (before or after the edit): what it reaches is as it was;
/// - it does not define a name a changed statement defines, or calls inside
///   a loop (the callee KL001 follows, the loops around its first caller);
/// - it launches no kernel that is walked (a kernel's rules read its launch
///   sites), and is not in `forced`.
///
/// What else a stub's findings read of the candidate is compared by the
/// caller (`host_context`); a rule that needs more of a stub marks the model
/// (`FileModel::read_a_stub`) and the caller reads again with it walked.
fn host_stubs(
    prev: &Snapshot,
    matched: &[Option<usize>],
    changed_defines: &HashSet<String>,
    changed_loop_calls: &HashSet<String>,
    walked_kernels: &HashSet<String>,
    forced: &HashSet<usize>,
) -> Vec<bool> {
    if !prev.units.iter().any(|u| u.facts.links().host_stub.is_some()) {
        return vec![false; matched.len()];
    }
    let mut callers_of: HashMap<&str, Vec<usize>> = HashMap::new();
    for (o, u) in prev.units.iter().enumerate() {
        for t in &u.facts.links().calls_to {
            callers_of.entry(t.as_str()).or_default().push(o);
        }
    }
    // The statements that reach a changed definition, through calls by name.
    let mut reached: HashSet<&str> = changed_defines.iter().map(String::as_str).collect();
    let mut queue: Vec<&str> = reached.iter().copied().collect();
    let mut reaches = vec![false; prev.units.len()];
    while let Some(name) = queue.pop() {
        for &o in callers_of.get(name).into_iter().flatten() {
            if std::mem::replace(&mut reaches[o], true) {
                continue;
            }
            for d in prev.units[o].facts.defined_names() {
                if reached.insert(d.as_str()) {
                    queue.push(d.as_str());
                }
            }
        }
    }
    matched
        .iter()
        .enumerate()
        .map(|(i, o)| {
            o.is_some_and(|o| {
                let f = &prev.units[o].facts;
                f.links().host_stub.is_some()
                    && !reaches[o]
                    && !forced.contains(&i)
                    && !f.defined_names().any(|d| changed_defines.contains(d) || changed_loop_calls.contains(d))
                    && !f.launched.iter().any(|k| walked_kernels.contains(k))
            })
        })
        .collect()
}

/// What the findings of a host stub read of a candidate besides the
/// functions it reaches: the `torch.nn` modules `ModelNew` holds (KL101),
/// whether the task is half precision (KL106), and whether a method of
/// `ModelNew` stores into `self` (then KL104 reads every function `forward`
/// reaches, and host stubs are not used).
#[derive(Debug, Clone, Default, PartialEq)]
struct HostContext {
    modules: Vec<(String, String)>,
    half: bool,
    stores: bool,
}

fn host_context(model: &FileModel) -> HostContext {
    if !candidate::is_candidate(model) {
        return HostContext::default();
    }
    let imports = candidate::imports(model);
    HostContext {
        modules: candidate::torch_modules(model, &imports, "ModelNew"),
        half: candidate::task_is_half(model, &imports),
        stores: !candidate::self_stores(model).is_empty(),
    }
}

/// Kernel name -> launches-per-forward estimate, from the statements' own
/// (`model::launch_estimates` over the whole file: the first time loop, in
/// the order the model finds them, that launches the kernel).
fn merged_estimates(units: &[Unit]) -> HashMap<String, String> {
    let mut all: Vec<(Option<isize>, &String, &String)> = units
        .iter()
        .flat_map(|u| {
            u.facts.links().estimates.iter().map(move |(start, k, e)| (start.map(|s| s as isize + u.delta), k, e))
        })
        .collect();
    all.sort_by_key(|(start, _, _)| *start);
    let mut out = HashMap::new();
    for (_, k, e) in all {
        out.entry(k.clone()).or_insert_with(|| e.clone());
    }
    out
}

/// Kernel name -> launch sites, from the statements' own.
fn merged_launch_counts(units: &[Unit]) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for u in units {
        for (k, n) in &u.facts.links().launch_sites {
            *out.entry(k.clone()).or_insert(0) += n;
        }
    }
    out
}

/// The host rules' findings on `model` (with `skip_per_node`, but those that answer per node): with
/// `two_threads`, two threads take the rules one at a time as each finishes
/// one, so that the costly ones (KL001, KL010) do not fall to one thread
/// (the model is only read; the findings are sorted later, so the order
/// they come in does not matter).
fn host_rules(model: &FileModel, settings: &Settings, two_threads: bool, skip_per_node: bool) -> Vec<Diagnostic> {
    host_rules_beside(model, settings, two_threads, skip_per_node, || ()).1
}

/// `here` on this thread, and the host rules (with `skip_per_node`, but those that answer per node) with
/// it: with `two_threads`, a second thread starts on the rules at once and
/// this one joins in when `here` is done, each taking the next rule not yet
/// started; otherwise this thread runs `here`, then the rules.
fn host_rules_beside<R>(
    model: &FileModel,
    settings: &Settings,
    two_threads: bool,
    skip_per_node: bool,
    here: impl FnOnce() -> R,
) -> (R, Vec<Diagnostic>) {
    let host: Vec<&rules::Rule> = rules::RULES
        .iter()
        .filter(|r| r.reach == Reach::Host && settings.enabled(r.code) && !(skip_per_node && r.per_node.is_some()))
        .collect();
    let next = AtomicUsize::new(0);
    if !two_threads || host.is_empty() {
        let result = here();
        return (result, run_shared(model, settings, &host, &next));
    }
    std::thread::scope(|scope| {
        let other = std::thread::Builder::new()
            .name("host-rules".to_string())
            .spawn_scoped(scope, || run_shared(model, settings, &host, &next));
        let result = here();
        // A thread that could not start leaves every rule to this one.
        let mut out = run_shared(model, settings, &host, &next);
        if let Ok(h) = other {
            out.extend(h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        }
        (result, out)
    })
}

/// Runs the rules of `list` that no other thread has taken (`next` counts
/// those taken), one at a time: threads sharing `next` split the rules as
/// they finish them, whatever each costs, and run each once.
fn run_shared(model: &FileModel, settings: &Settings, list: &[&rules::Rule], next: &AtomicUsize) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    while let Some(rule) = list.get(next.fetch_add(1, Ordering::Relaxed)) {
        (rule.check)(model, settings, &mut out);
    }
    out
}

/// The findings in one statement of the rules that answer per node
/// (`Rule::per_node`: KL107, KL108), enabled or not: each depends on its
/// node and the file's imports alone.
fn node_local_findings(src: &str, imports: &Imports, unit: Node) -> Vec<Diagnostic> {
    let mut nodes = Vec::new();
    crate::model::visit_nodes(unit, &mut |n| nodes.push(n));
    rules::RULES.iter().filter_map(|r| r.per_node).flat_map(|per_node| per_node(src, imports, &nodes)).collect()
}

/// Whether the rule that reported `code` answers per node (`Rule::per_node`).
fn is_node_local(code: &str) -> bool {
    rules::by_code(code).is_some_and(|r| r.per_node.is_some())
}

/// Which statements an edit left as they were: those before and after the
/// edited span that read as they did (same kind and text: a top-level
/// statement without syntax errors then parses the same; for one with
/// errors, the same syntax tree). Returns, for each new statement, the old
/// one it matches, and for each old statement the new one.
fn match_units(prev: &Snapshot, nodes: &[Node], text: &str) -> (Vec<Option<usize>>, Vec<Option<usize>>) {
    let same = |o: usize, i: usize| {
        let (u, n) = (&prev.units[o], nodes[i]);
        u.facts.kind == n.kind_id()
            && u.facts.error_shape.is_some() == n.has_error()
            && prev.text.get(u.range.start..u.range.end) == text.get(n.byte_range())
            && u.facts.error_shape.as_ref().is_none_or(|s| *s == shape(n))
    };
    let (old_len, new_len) = (prev.units.len(), nodes.len());
    let mut prefix = 0;
    while prefix < old_len && prefix < new_len && same(prefix, prefix) {
        prefix += 1;
    }
    let mut suffix = 0;
    while suffix < old_len - prefix && suffix < new_len - prefix && same(old_len - 1 - suffix, new_len - 1 - suffix) {
        suffix += 1;
    }
    let mut matched: Vec<Option<usize>> = vec![None; new_len];
    let mut old_to_new: Vec<Option<usize>> = vec![None; old_len];
    for i in (0..prefix).chain(new_len - suffix..new_len) {
        let o = if i < prefix { i } else { i + old_len - new_len };
        matched[i] = Some(o);
        old_to_new[o] = Some(i);
    }
    (matched, old_to_new)
}

/// Whether a host rule reported `d`.
fn is_host_diag(d: &Diagnostic) -> bool {
    rules::by_code(&d.code).is_some_and(|r| r.reach == Reach::Host)
}

/// Kernel name -> launch sites, for the kernel summaries.
fn launch_counts(model: &FileModel) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for l in &model.launches {
        *counts.entry(l.kernel.clone()).or_insert(0) += 1;
    }
    counts
}

/// Whether `text` holds the word `import` as the keyword is written (not
/// part of a longer name: `important`, `reimport`), comments and strings
/// included: a cheap test that errs towards treating a statement as host code.
fn has_import_keyword(text: &str) -> bool {
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80;
    text.match_indices("import").any(|(at, _)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + "import".len()).copied();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// Every node of a statement: kind, start and end relative to the statement.
fn shape(unit: Node) -> Vec<(u16, u32, u32)> {
    let base = unit.start_byte();
    let mut out = Vec::new();
    let mut cursor = unit.walk();
    let mut depth = 0usize;
    loop {
        let n = cursor.node();
        out.push((n.kind_id(), (n.start_byte() - base) as u32, (n.end_byte() - base) as u32));
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if depth == 0 {
                return out;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            cursor.goto_parent();
            depth -= 1;
        }
    }
}

fn shift_range(r: TextRange, delta: isize) -> TextRange {
    TextRange::new((r.start as isize + delta) as usize, (r.end as isize + delta) as usize)
}

/// A diagnostic with every position moved by `delta`.
fn shifted(d: &Diagnostic, delta: isize) -> Diagnostic {
    let mut d = d.clone();
    if delta != 0 {
        d.range = shift_range(d.range, delta);
        for r in &mut d.related {
            r.range = shift_range(r.range, delta);
        }
        if let Some(fix) = &mut d.fix {
            for e in &mut fix.edits {
                e.range = shift_range(e.range, delta);
            }
        }
    }
    d
}

/// A cached diagnostic with every position moved to the new text; `None` if one cannot be.
fn remap(d: &Diagnostic, map: &impl Fn(usize) -> Option<usize>) -> Option<Diagnostic> {
    let range = |r: TextRange| -> Option<TextRange> { Some(TextRange::new(map(r.start)?, map(r.end)?)) };
    let mut d = d.clone();
    d.range = range(d.range)?;
    for r in &mut d.related {
        r.range = range(r.range)?;
    }
    if let Some(fix) = &mut d.fix {
        for e in &mut fix.edits {
            e.range = range(e.range)?;
        }
    }
    Some(d)
}

impl Snapshot {
    /// The file's diagnostics (suppressions applied, in order), kernels, classes and reference.
    pub fn result(&self, index: &LineIndex) -> CheckResult {
        let mut suppressions = HashMap::new();
        let mut reference = None;
        for u in &self.units {
            for (pos, d) in &u.facts.directives {
                match d {
                    Directive::Ignore(s) => {
                        suppressions.insert(index.line_of((*pos as isize + u.delta) as usize), s);
                    }
                    Directive::Reference(path) => reference = Some(path.clone()),
                }
            }
        }
        let kept = |d: &Diagnostic| !suppressions.get(&index.line_of(d.range.start)).is_some_and(|s| s.covers(&d.code));
        let mut diagnostics = Vec::new();
        for u in &self.units {
            diagnostics.extend(u.facts.diags.iter().map(|d| shifted(d, u.delta)).filter(kept));
            diagnostics.extend(u.foreign.iter().filter(|d| kept(d)).cloned());
        }
        diagnostics.extend(self.host_diags.iter().filter(|d| kept(d)).cloned());
        rules::finish(&mut diagnostics);
        let kernels = self
            .units
            .iter()
            .flat_map(|u| u.facts.kernels.iter().map(move |k| (k, u.delta)))
            .map(|(k, delta)| {
                let estimate = self.estimates.get(&k.name).cloned();
                KernelSummary {
                    name: k.name.clone(),
                    range: shift_range(k.header_range, delta),
                    persistent: (k.persistent_shape && estimate.is_none()) || k.grid_stride,
                    has_time_loop: k.has_time_loop,
                    launch_sites: self.launch_counts.get(&k.name).copied().unwrap_or(0),
                    launches_per_forward: estimate,
                }
            })
            .collect();
        let classes = self
            .units
            .iter()
            .flat_map(|u| {
                u.facts
                    .classes
                    .iter()
                    .map(|c| ClassSummary { name: c.name.clone(), range: shift_range(c.range, u.delta) })
            })
            .collect();
        CheckResult { diagnostics, kernels, classes, reference }
    }

    /// Whether this snapshot was derived from the previous one rather than built afresh.
    pub fn is_incremental(&self) -> bool {
        self.path != Path::Fresh
    }

    /// How this snapshot was made.
    pub fn path(&self) -> Path {
        self.path
    }

    /// How many top-level statements the host path read as stubs (0 on the other paths).
    pub fn stubs(&self) -> usize {
        self.stubs
    }

    /// How many of those were host functions (`Stub::Host`).
    pub fn host_stubs(&self) -> usize {
        self.host_stubs
    }

    /// How many models the host path built (more than one when a rule read a host stub).
    pub fn builds(&self) -> usize {
        self.builds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_import_keyword_is_found_as_a_word() {
        assert!(has_import_keyword("import torch"));
        assert!(has_import_keyword("from x import (y)"));
        assert!(has_import_keyword("    import torch.item("));
        assert!(has_import_keyword("x = 1\nimport"));
        assert!(!has_import_keyword("# important: the mask"));
        assert!(!has_import_keyword("reimport_ = 1"));
        assert!(!has_import_keyword("imports = []"));
    }

    /// A candidate of about 64 KB: blocks of a kernel (with a KL108 finding
    /// inside) and a helper that launches it in a time loop, and a `forward`
    /// that calls every helper. Returns the text and the number of blocks.
    fn many_blocks() -> (String, usize) {
        let mut text = String::from(
            "import os\nimport torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n",
        );
        let mut i = 0;
        while text.len() < 2 * PARALLEL_INDEX_BYTES {
            text.push_str(&format!(
                r#"

@triton.jit
def k{i}(x_ptr, h_ptr, out_ptr, n, H):
    offs = tl.arange(0, H)
    h = tl.load(h_ptr + offs)
    tl.store(out_ptr + offs, tl.tanh(h) + os.environ["A"])


def run{i}(x, h, steps):
    out = torch.empty_like(h)
    for t in range(steps):
        k{i}[(1,)](x[t], h, out, h.numel(), 64)
        h = out
        if h.sum().item() > 0:
            break
    return h
"#
            ));
            i += 1;
        }
        text.push_str("\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        x = x.half()\n");
        for j in 0..i {
            text.push_str(&format!("        x = run{j}(x, x, 8)\n"));
        }
        text.push_str("        return x\n");
        (text, i)
    }

    /// The two-thread full analysis (node index beside the model, host rules
    /// beside the kernel rules) gives what one thread gives, on a candidate
    /// large enough to take it, with findings of every reach.
    #[test]
    fn two_threads_give_what_one_gives() {
        let (text, _) = many_blocks();
        let text: Arc<str> = Arc::from(text.as_str());
        let tree = crate::model::parse(&text, None);
        let settings = Settings::default();
        let index = LineIndex::new(&text);
        let one = full_on(&text, &tree, &settings, false).result(&index);
        let two = full_on(&text, &tree, &settings, true).result(&index);
        for code in ["KL001", "KL004", "KL010", "KL106", "KL108"] {
            assert!(
                one.diagnostics.iter().any(|d| d.code == code),
                "no {code} in the {} diagnostics",
                one.diagnostics.len()
            );
        }
        assert_eq!(one, two);
        assert_eq!(two, check(&text, &tree, &settings));
    }

    /// An edit of host code (a helper in the middle, then `forward`) takes
    /// the host path, reads the kernels the edited statement does not launch
    /// as stubs, and gives what a full analysis gives, KL108 inside the
    /// stubbed kernels included.
    /// Re-parses `text` with `old` (after `anchor`) replaced by `new` and
    /// analyses it from `snapshot`; checks the result against a fresh analysis.
    fn edit_from(
        text: &mut Arc<str>,
        tree: &mut Tree,
        snapshot: &Snapshot,
        anchor: &str,
        old: &str,
        new: &str,
    ) -> (CheckResult, Snapshot) {
        let at = text.find(anchor).expect("anchor");
        let start = at + text[at..].find(old).expect("old");
        let edited = format!("{}{new}{}", &text[..start], &text[start + old.len()..]);
        let index = LineIndex::new(text);
        let new_index = LineIndex::new(&edited);
        let point = |index: &LineIndex, b: usize| {
            let row = index.line_of(b);
            tree_sitter::Point::new(row, b - index.line_start(row))
        };
        tree.edit(&tree_sitter::InputEdit {
            start_byte: start,
            old_end_byte: start + old.len(),
            new_end_byte: start + new.len(),
            start_position: point(&index, start),
            old_end_position: point(&index, start + old.len()),
            new_end_position: point(&new_index, start + new.len()),
        });
        *text = Arc::from(edited.as_str());
        *tree = crate::model::parse(text, Some(tree));
        let settings = Settings::default();
        let (result, next) = analyze(text, tree, &settings, &new_index, Some(snapshot));
        assert_eq!(result, check(text, tree, &settings), "{new}");
        (result, next)
    }

    /// A host function read as a stub keeps its findings while the edit
    /// reaches nothing it reads; when a rule needs more of it than a stub
    /// keeps (a time loop in a class method relaunching it: its launch sites),
    /// the analysis is made again with that function walked (the others stay
    /// stubs), and gives what a fresh one gives.
    #[test]
    fn host_stubs_are_walked_when_a_rule_needs_their_body() {
        let text = "import torch\nimport triton\nimport triton.language as tl\n\n\
                    @triton.jit\ndef step_kernel(x_ptr, h_ptr, n, B: tl.constexpr):\n    \
                    o = tl.arange(0, B)\n    tl.store(h_ptr + o, tl.load(x_ptr + o) + tl.load(h_ptr + o))\n\n\
                    def step(x, h):\n    step_kernel[(1,)](x, h, h.numel(), B=64)\n    return h\n\n\
                    def other(x):\n    return x + 1\n\n\
                    def scale(x):\n    return x * 2\n\n\
                    class Model(torch.nn.Module):\n    def forward(self, x, h):\n        \
                    for t in range(x.shape[0]):\n            h = step(x[t], h)\n        return h\n";
        let settings = Settings::default();
        let mut text: Arc<str> = Arc::from(text);
        let mut tree = crate::model::parse(&text, None);
        let (first, snapshot) = analyze(&text, &tree, &settings, &LineIndex::new(&text), None);
        assert!(first.diagnostics.iter().any(|d| d.code == "KL001"), "{:?}", first.diagnostics);
        // The first host edit after a fresh analysis reads every statement (and keeps their links).
        let (_, snapshot) = edit_from(&mut text, &mut tree, &snapshot, "def scale", "x * 2", "x * 3");
        assert_eq!((snapshot.path(), snapshot.host_stubs()), (Path::Host, 0));
        // `other` changes: `scale` is a stub, but `forward`'s time loop
        // (walked with its class) reaches `step`'s launch: `step` is walked.
        let (second, next) = edit_from(&mut text, &mut tree, &snapshot, "def other", "x + 1", "x + 2");
        assert!(second.diagnostics.iter().any(|d| d.code == "KL001"), "{:?}", second.diagnostics);
        assert_eq!(next.path(), Path::Host);
        assert_eq!(next.host_stubs(), 1, "`scale` a stub, `step` (whose launch sites a rule read) walked");
        assert_eq!(next.builds(), 2, "read with `step` a stub, then again with it walked");
        // The next edit walks `step` from the start.
        let (_, next) = edit_from(&mut text, &mut tree, &next, "def other", "x + 2", "x + 4");
        assert_eq!((next.host_stubs(), next.builds()), (1, 1));
        let (_, next) = edit_from(&mut text, &mut tree, &next, "def other", "x + 4", "x + 2");
        // Without the time loop nothing reads a stub's body: `step` and `scale` are stubs.
        let (_, next) = edit_from(
            &mut text,
            &mut tree,
            &next,
            "for t in",
            "for t in range(x.shape[0]):\n            h = step(x[t], h)",
            "h = step(x[0], h)",
        );
        let (_, next) = edit_from(&mut text, &mut tree, &next, "def other", "x + 2", "x + 3");
        assert_eq!(next.path(), Path::Host);
        assert_eq!(next.host_stubs(), 2, "`step` and `scale` read as stubs");
    }

    #[test]
    fn host_edits_read_unaffected_kernels_as_stubs() {
        let (text, blocks) = many_blocks();
        let settings = Settings::default();
        let mut text: Arc<str> = Arc::from(text.as_str());
        let mut tree = crate::model::parse(&text, None);
        let (_, mut snapshot) = analyze(&text, &tree, &settings, &LineIndex::new(&text), None);
        let middle = format!("def run{}(", blocks / 2);
        // The first host edit after a fresh analysis reads every host function (and keeps their links).
        snapshot = edit_from(&mut text, &mut tree, &snapshot, "def run0(", "return h", "return h * 1").1;
        assert_eq!((snapshot.path(), snapshot.host_stubs()), (Path::Host, 0));
        for (anchor, old, new) in [
            (middle.as_str(), "out = torch.empty_like(h)", "out = torch.empty_like(h) * 2"),
            (middle.as_str(), "out = torch.empty_like(h) * 2", "out = torch.zeros_like(h) * 2"),
            ("def forward", "x = x.half()", "x = x.float()"),
        ] {
            let (result, next) = edit_from(&mut text, &mut tree, &snapshot, anchor, old, new);
            assert_eq!(next.path(), Path::Host, "{new}");
            assert!(next.stubs() + 2 >= blocks, "{} stubs for {blocks} kernels", next.stubs());
            // Every launching helper but the one edited is a host stub: the
            // edit reaches none of them, and `forward` calls none in a loop.
            assert!(next.host_stubs() + 1 >= blocks, "{} host stubs for {blocks} helpers", next.host_stubs());
            assert!(result.diagnostics.iter().filter(|d| d.code == "KL108").count() >= blocks);
            snapshot = next;
        }
    }
}
