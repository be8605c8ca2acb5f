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
//! (`host_incremental`). Either way the result equals [`super::check`] on the
//! same text (the property tests in `lsp::document` check that on random
//! edit sequences, on all three paths).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tree_sitter::{Node, Tree};

use super::{CheckResult, ClassSummary, KernelSummary};
use crate::config::Settings;
use crate::diagnostic::Diagnostic;
use crate::model::{imports_of, kernel_host_view, launch_estimates, range_of, Directive, FileModel, KernelHostView};
use crate::rules::hygiene::{self, Imports};
use crate::rules::{self, kl107, kl108, Reach};
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
    /// Statements read as stubs (the host path), for tests and benchmarks.
    stubs: usize,
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
        host_rules_beside(&model, settings, two_threads, &[], || facts(&model, &nodes, &all, settings));
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
        candidate: hygiene::is_candidate(&model).then(|| Arc::new(hygiene::imports(&model))),
    }
}

/// The statements `selected` (indexes into `nodes`, ascending) as `model`
/// (which walked at least them) sees them, without host-rule diagnostics;
/// and KL005 diagnostics that fall in no statement.
fn facts(model: &FileModel, nodes: &[Node], selected: &[usize], settings: &Settings) -> (Vec<Fresh>, Vec<Diagnostic>) {
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
            host_view: Arc::new(kernel_host_view(model, k)),
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
    (units, loose)
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
        let (fresh, loose) = facts(&model, nodes, &recheck, &prev.settings);
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
        candidate: prev.candidate.clone(),
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
    let hygiene_local = |code: &str| code == kl107::RULE.code || code == kl108::RULE.code;
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
                && f.diags.iter().all(|d| !is_host_diag(d) || hygiene_local(&d.code))
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
    let mut attempt = 0;
    loop {
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
        let units: Vec<crate::model::PartialUnit> =
            (0..new_len).map(|i| (nodes[i], stub[i].then_some(views[i].as_slice()))).collect();
        let two_threads = text.len() >= PARALLEL_INDEX_BYTES;
        let model = FileModel::build_stubbed(text, tree, &units, aliases, two_threads)
            .ok_or("a stub's kernels are not as they were")?;
        let read: Vec<usize> = (0..new_len).filter(|&i| !stub[i]).collect();
        let (fresh, loose) = facts(&model, nodes, &read, &prev.settings);
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
        if !missing.is_empty() {
            attempt += 1;
            if attempt > 2 {
                return Err("the kernels to read did not settle");
            }
            defined.extend(missing.iter().cloned());
            walked.extend(missing);
            continue;
        }
        let candidate = hygiene::is_candidate(&model);
        if candidate != prev.candidate.is_some() {
            return Err("the file became, or stopped being, a candidate");
        }
        // KL107 and KL108 are asked below, of the changed statements only.
        let host = host_rules(&model, &prev.settings, two_threads, &[kl107::RULE.code, kl108::RULE.code]);
        let ranges: Vec<TextRange> = nodes.iter().map(|n| range_of(*n)).collect();
        let mut slot = vec![usize::MAX; new_len];
        for (s, &i) in read.iter().enumerate() {
            slot[i] = s;
        }
        let mut fresh = fresh;
        let mut host_diags = loose;
        let mut on_stubs: HashMap<usize, Vec<Diagnostic>> = HashMap::new();
        for d in host {
            match home(&ranges, &d) {
                Some(i) if stub[i] => on_stubs.entry(i).or_default().push(d),
                Some(i) => fresh[slot[i]].0.diags.push(d),
                None => host_diags.push(d),
            }
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
                        old.facts.diags.iter().filter(|d| hygiene_local(&d.code)).map(|d| shifted(d, delta)).collect()
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
            if !stub[i] {
                let (facts, foreign) = fresh.next().ok_or("a statement was not re-read")?;
                out.push(Unit { facts: Arc::new(facts), range, delta: 0, foreign });
                continue;
            }
            let old = &prev.units[matched[i].ok_or("a stub was not matched")?];
            let delta = old.delta_at(range.start);
            let foreign = m.moved(prev, &old.foreign)?;
            let facts = match on_stubs.remove(&i) {
                None => old.facts.clone(),
                // A host rule reported in a stub (on its header): its findings, at the positions they were read at.
                Some(found) => {
                    let mut facts = (*old.facts).clone();
                    facts.diags.extend(found.iter().map(|d| shifted(d, -delta)));
                    Arc::new(facts)
                }
            };
            out.push(Unit { facts, range, delta, foreign });
        }
        return Ok(Snapshot {
            settings: prev.settings.clone(),
            text: text.clone(),
            estimates: launch_estimates(&model),
            tl_aliases: aliases.0.clone(),
            triton_aliases: aliases.1.clone(),
            units: out,
            host_diags,
            launch_counts: launch_counts(&model),
            path: Path::Host,
            stubs: stub.iter().filter(|s| **s).count(),
            candidate: candidate.then(|| Arc::new(hygiene::imports(&model))),
        });
    }
}

/// The host rules' findings on `model` (but the rules in `skip`): with
/// `two_threads`, two threads take the rules one at a time as each finishes
/// one, so that the costly ones (KL001, KL010) do not fall to one thread
/// (the model is only read; the findings are sorted later, so the order
/// they come in does not matter).
fn host_rules(model: &FileModel, settings: &Settings, two_threads: bool, skip: &[&str]) -> Vec<Diagnostic> {
    host_rules_beside(model, settings, two_threads, skip, || ()).1
}

/// `here` on this thread, and the host rules (but those in `skip`) with
/// it: with `two_threads`, a second thread starts on the rules at once and
/// this one joins in when `here` is done, each taking the next rule not yet
/// started; otherwise this thread runs `here`, then the rules.
fn host_rules_beside<R>(
    model: &FileModel,
    settings: &Settings,
    two_threads: bool,
    skip: &[&str],
    here: impl FnOnce() -> R,
) -> (R, Vec<Diagnostic>) {
    let host: Vec<&rules::Rule> = rules::RULES
        .iter()
        .filter(|r| is_host_rule(r) && settings.enabled(r.code) && !skip.contains(&r.code))
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

/// The KL107 and KL108 findings in one statement: each depends on its node
/// and the file's imports alone (in the order the whole-file rules give them).
fn node_local_findings(src: &str, imports: &Imports, unit: Node) -> Vec<Diagnostic> {
    let mut candidates = Vec::new();
    crate::model::visit_nodes(unit, &mut |n| candidates.push(n));
    let patches = kl107::patches_among(src, imports, candidates.iter().copied());
    let mut found = kl108::node_findings(src, imports, candidates.iter().copied());
    found.sort_by_key(|(r, _)| (r.start, r.end));
    found.dedup();
    let mut out: Vec<Diagnostic> = patches.into_iter().map(|(r, target)| kl107::diagnostic(r, &target)).collect();
    out.extend(found.into_iter().map(|(r, why)| kl108::diagnostic(r, &why)));
    out
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

fn is_host_rule(rule: &rules::Rule) -> bool {
    rules::reach(rule) == Reach::Host
}

/// Whether a host rule reported `d`.
fn is_host_diag(d: &Diagnostic) -> bool {
    rules::by_code(&d.code).is_some_and(is_host_rule)
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
    #[test]
    fn host_edits_read_unaffected_kernels_as_stubs() {
        let (text, blocks) = many_blocks();
        let settings = Settings::default();
        let mut text: Arc<str> = Arc::from(text.as_str());
        let mut tree = crate::model::parse(&text, None);
        let (_, mut snapshot) = analyze(&text, &tree, &settings, &LineIndex::new(&text), None);
        let middle = format!("def run{}(", blocks / 2);
        for (anchor, old, new) in [
            (middle.as_str(), "out = torch.empty_like(h)", "out = torch.empty_like(h) * 2"),
            (middle.as_str(), "out = torch.empty_like(h) * 2", "out = torch.zeros_like(h) * 2"),
            ("def forward", "x = x.half()", "x = x.float()"),
        ] {
            let at = text.find(anchor).expect("anchor");
            let start = at + text[at..].find(old).expect("old");
            let edited = format!("{}{new}{}", &text[..start], &text[start + old.len()..]);
            let index = LineIndex::new(&text);
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
            text = Arc::from(edited.as_str());
            tree = crate::model::parse(&text, Some(&tree));
            let (result, next) = analyze(&text, &tree, &settings, &new_index, Some(&snapshot));
            assert_eq!(next.path(), Path::Host, "{new}");
            assert!(next.stubs() + 2 >= blocks, "{} stubs for {blocks} kernels", next.stubs());
            assert!(result.diagnostics.iter().filter(|d| d.code == "KL108").count() >= blocks);
            assert_eq!(result, check(&text, &tree, &settings), "{new}");
            snapshot = next;
        }
    }
}
