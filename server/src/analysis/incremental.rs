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
//! After an edit, a statement whose tree-sitter subtree is the very one of the
//! previous tree (same node id: tree-sitter reused it, so its text and
//! structure are unchanged) keeps its facts, moved by the bytes it moved. The
//! changed statements are re-read, with [`FileModel::build_partial`], together
//! with what their kernel rules read: the helpers their kernels call, the
//! statements that launch them and the module-level assignments. That is
//! exact only while no host code changed, so the incremental path is taken
//! only when every changed statement, before and after, contributes nothing
//! to host code (no host function, class, module-level loop, call,
//! assignment, sync or launch), defines the same kernel names in the same
//! order, and the imports are the same; otherwise, and whenever a cached
//! position cannot be mapped, the file is analysed afresh. Either way the
//! result equals [`super::check`] on the same text (the property test in
//! `lsp::document` checks that on random edit sequences).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tree_sitter::{Node, Tree};

use super::model::{imports_of, range_of, Directive, FileModel};
use super::{CheckResult, ClassSummary, KernelSummary};
use crate::config::Settings;
use crate::diagnostic::Diagnostic;
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
    /// KL001 and KL010 (host code), and anything not inside a statement.
    host_diags: Vec<Diagnostic>,
    /// Kernel name -> launches-per-forward estimate (KL001), for the summaries.
    estimates: HashMap<String, String>,
    /// Kernel name -> launch sites.
    launch_counts: HashMap<String, usize>,
    /// Whether this snapshot was derived from the previous one rather than built afresh.
    incremental: bool,
}

/// What one top-level statement contributes.
#[derive(Debug, Clone)]
struct Unit {
    /// The statement's node kind.
    kind: u16,
    /// For a statement with a syntax error, its whole syntax tree (every
    /// node's kind and span): error recovery may read the same text differently,
    /// so such a statement is reused only if it parsed the same way.
    error_shape: Option<Vec<(u16, u32, u32)>>,
    range: TextRange,
    /// Contributes nothing to host code (see the module doc).
    neutral: bool,
    kernels: Vec<KernelFacts>,
    /// Names the kernels defined here call that are not `tl.*` (possible `@triton.jit` helpers).
    helper_callees: Vec<String>,
    /// Kernels launched from here.
    launched: Vec<String>,
    /// Assigns a module-level name (read by constant evaluation).
    module_assigns: bool,
    /// Before suppression: the kernel rules' for the kernels defined here, KL005's for attributes here.
    diags: Vec<Diagnostic>,
    classes: Vec<ClassSummary>,
    directives: Vec<(usize, Directive)>,
}

#[derive(Debug, Clone)]
struct KernelFacts {
    name: String,
    header_range: TextRange,
    has_time_loop: bool,
}

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
        Some(p) if p.settings == *settings => incremental(text, tree, p).unwrap_or_else(|why| {
            tracing::debug!("analysing afresh: {why}");
            full(text, tree, settings)
        }),
        _ => full(text, tree, settings),
    };
    (snapshot.result(index), snapshot)
}

/// The result of a fresh analysis, without a snapshot.
pub fn check(text: &str, tree: &Tree, settings: &Settings) -> CheckResult {
    full(&Arc::from(text), tree, settings).result(&LineIndex::new(text))
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

fn full(text: &Arc<str>, tree: &Tree, settings: &Settings) -> Snapshot {
    let model = FileModel::build(text, tree);
    let nodes = top_level(tree);
    let all: Vec<usize> = (0..nodes.len()).collect();
    let (units, mut loose) = facts(&model, &nodes, &all, settings);
    let mut host_diags = Vec::new();
    rules::run_reach(&model, settings, Reach::Host, &mut host_diags);
    host_diags.append(&mut loose);
    let mut launch_counts = HashMap::new();
    for l in &model.launches {
        *launch_counts.entry(l.kernel.clone()).or_insert(0) += 1;
    }
    Snapshot {
        settings: settings.clone(),
        text: text.clone(),
        estimates: rules::kl001::launch_estimates(&model),
        tl_aliases: model.tl_aliases.clone(),
        triton_aliases: model.triton_aliases.clone(),
        units,
        host_diags,
        launch_counts,
        incremental: false,
    }
}

/// The units `selected` (indexes into `nodes`, ascending) as `model` (which
/// walked at least them) sees them; and kernel-rule diagnostics that fall in
/// no statement.
fn facts(model: &FileModel, nodes: &[Node], selected: &[usize], settings: &Settings) -> (Vec<Unit>, Vec<Diagnostic>) {
    let ranges: Vec<TextRange> = nodes.iter().map(|n| range_of(*n)).collect();
    let mut slot: HashMap<usize, usize> = HashMap::with_capacity(selected.len());
    let mut units: Vec<Unit> = selected
        .iter()
        .enumerate()
        .map(|(s, &i)| {
            slot.insert(i, s);
            Unit {
                kind: nodes[i].kind_id(),
                error_shape: nodes[i].has_error().then(|| shape(nodes[i])),
                range: ranges[i],
                neutral: true,
                kernels: Vec::new(),
                helper_callees: Vec::new(),
                launched: Vec::new(),
                module_assigns: false,
                diags: Vec::new(),
                classes: Vec::new(),
                directives: Vec::new(),
            }
        })
        .collect();
    let unit = |pos: usize| unit_of(&ranges, pos).and_then(|i| slot.get(&i).copied());
    let mut loose = Vec::new();

    // Kernels: the kernel rules one kernel at a time, so each diagnostic belongs to its kernel.
    for (ki, k) in model.kernels.iter().enumerate() {
        let Some(u) = unit(k.node.start_byte()) else { continue };
        let unit = &mut units[u];
        unit.kernels.push(KernelFacts {
            name: k.name.clone(),
            header_range: k.header_range,
            has_time_loop: !k.time_loops(model).is_empty(),
        });
        for c in k.calls.iter().filter(|c| c.tl_name.is_none()) {
            if !unit.helper_callees.contains(&c.callee) {
                unit.helper_callees.push(c.callee.clone());
            }
        }
        model.set_focus(Some((ki, ki + 1)));
        rules::run_reach(model, settings, Reach::Kernel, &mut unit.diags);
    }
    model.set_focus(None);
    // KL005 reports on the attribute itself, inside its statement.
    let mut attr_diags = Vec::new();
    rules::run_reach(model, settings, Reach::TlAttr, &mut attr_diags);
    for d in attr_diags {
        match unit_of(&ranges, d.range.start) {
            Some(i) => {
                if let Some(&u) = slot.get(&i) {
                    units[u].diags.push(d)
                }
            }
            None => loose.push(d),
        }
    }
    // Host code.
    let mut host = |pos: usize| {
        if let Some(u) = unit(pos) {
            units[u].neutral = false;
        }
    };
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
            units[u].module_assigns = true;
        }
    }
    for l in &model.launches {
        if let Some(u) = unit(l.node.start_byte()) {
            if !units[u].launched.contains(&l.kernel) {
                units[u].launched.push(l.kernel.clone());
            }
        }
    }
    for c in &model.classes {
        if let Some(u) = unit(c.node.start_byte()) {
            units[u].classes.push(ClassSummary { name: c.name.clone(), range: c.name_range });
        }
    }
    for (pos, d) in &model.directives {
        if let Some(u) = unit(*pos) {
            units[u].directives.push((*pos, d.clone()));
        }
    }
    (units, loose)
}

fn incremental(text: &Arc<str>, tree: &Tree, prev: &Snapshot) -> Result<Snapshot, &'static str> {
    let nodes = top_level(tree);
    let aliases = imports_of(&nodes, text);
    if aliases.0 != prev.tl_aliases || aliases.1 != prev.triton_aliases {
        return Err("the imports changed");
    }
    // Statements before and after the edits that read as they did: same kind
    // and text (a top-level statement without syntax errors then parses the
    // same), and for one with errors the same syntax tree.
    let same = |o: usize, i: usize| {
        let (u, n) = (&prev.units[o], nodes[i]);
        u.kind == n.kind_id()
            && u.error_shape.is_some() == n.has_error()
            && prev.text.get(u.range.start..u.range.end) == text.get(n.byte_range())
            && u.error_shape.as_ref().is_none_or(|s| *s == shape(n))
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
    let changed_old: Vec<usize> = (0..prev.units.len()).filter(|&o| old_to_new[o].is_none()).collect();
    let changed_new: Vec<usize> = (0..nodes.len()).filter(|&i| matched[i].is_none()).collect();
    if changed_old.iter().any(|&o| !prev.units[o].neutral) {
        return Err("a changed statement had host code");
    }
    // The changed statements as they are now: still no host code, the same kernels.
    let changed_nodes: Vec<Node> = changed_new.iter().map(|&i| nodes[i]).collect();
    let probe = FileModel::build_partial(text, tree, &changed_nodes, &aliases);
    let module = &probe.host_fns[0];
    if probe.host_fns.len() > 1
        || !probe.classes.is_empty()
        || !probe.launch_candidates.is_empty()
        || !module.loops.is_empty()
        || !module.calls.is_empty()
        || !module.syncs.is_empty()
        || !module.assigns.is_empty()
    {
        return Err("a changed statement has host code");
    }
    let old_names: Vec<&str> =
        changed_old.iter().flat_map(|&o| prev.units[o].kernels.iter().map(|k| k.name.as_str())).collect();
    let new_names: Vec<&str> = probe.kernels.iter().map(|k| k.name.as_str()).collect();
    if old_names != new_names {
        return Err("kernels were added, removed or renamed");
    }
    // Re-checked: the changed statements and those whose kernels call a changed kernel.
    let changed_names: HashSet<&str> = old_names.iter().copied().collect();
    let mut recheck: Vec<usize> = (0..nodes.len())
        .filter(|&i| match matched[i] {
            None => true,
            Some(o) => prev.units[o].helper_callees.iter().any(|c| changed_names.contains(c.as_str())),
        })
        .collect();
    recheck.sort_unstable();
    // What their kernel rules read: helpers, launch sites, module-level assignments.
    let mut names: HashSet<&str> = HashSet::new();
    let mut helpers: HashSet<&str> = HashSet::new();
    for k in &probe.kernels {
        names.insert(k.name.as_str());
        helpers.extend(k.calls.iter().filter(|c| c.tl_name.is_none()).map(|c| c.callee.as_str()));
    }
    for &i in &recheck {
        if let Some(o) = matched[i] {
            names.extend(prev.units[o].kernels.iter().map(|k| k.name.as_str()));
            helpers.extend(prev.units[o].helper_callees.iter().map(String::as_str));
        }
    }
    let walk: Vec<usize> = (0..nodes.len())
        .filter(|&i| match matched[i] {
            None => true,
            Some(o) => {
                let u = &prev.units[o];
                recheck.binary_search(&i).is_ok()
                    || u.module_assigns
                    || u.kernels.iter().any(|k| helpers.contains(k.name.as_str()))
                    || u.launched.iter().any(|k| names.contains(k.as_str()))
            }
        })
        .collect();
    let walk_nodes: Vec<Node> = walk.iter().map(|&i| nodes[i]).collect();
    let model = FileModel::build_partial(text, tree, &walk_nodes, &aliases);
    let (fresh, loose) = facts(&model, &nodes, &recheck, &prev.settings);
    if !loose.is_empty() {
        return Err("a diagnostic outside every statement");
    }

    // Everything else moves with its statement.
    let old_ranges: Vec<TextRange> = prev.units.iter().map(|u| u.range).collect();
    let map = |pos: usize| -> Option<usize> {
        let o = unit_of(&old_ranges, pos)?;
        let n = old_to_new[o]?;
        Some(pos - old_ranges[o].start + nodes[n].start_byte())
    };
    let mut fresh = fresh.into_iter();
    let mut units = Vec::with_capacity(nodes.len());
    for (i, node) in nodes.iter().enumerate() {
        if recheck.binary_search(&i).is_ok() {
            units.push(fresh.next().ok_or("a statement was not re-read")?);
            continue;
        }
        let old = &prev.units[matched[i].ok_or("a statement was not matched")?];
        let delta = |pos: usize| pos - old.range.start + node.start_byte();
        let mut u = old.clone();
        u.range = range_of(*node);
        for k in &mut u.kernels {
            k.header_range = shift(k.header_range, delta);
        }
        for c in &mut u.classes {
            c.range = shift(c.range, delta);
        }
        for (pos, _) in &mut u.directives {
            *pos = delta(*pos);
        }
        for d in &mut u.diags {
            *d = remap(d, &map).ok_or("a cached position lies in a changed statement")?;
        }
        units.push(u);
    }
    let host_diags = prev
        .host_diags
        .iter()
        .map(|d| remap(d, &map))
        .collect::<Option<Vec<_>>>()
        .ok_or("a cached position lies in a changed statement")?;
    Ok(Snapshot {
        settings: prev.settings.clone(),
        text: text.clone(),
        tl_aliases: aliases.0,
        triton_aliases: aliases.1,
        units,
        host_diags,
        estimates: prev.estimates.clone(),
        launch_counts: prev.launch_counts.clone(),
        incremental: true,
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

fn shift(r: TextRange, f: impl Fn(usize) -> usize) -> TextRange {
    TextRange::new(f(r.start), f(r.end))
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
        for (pos, d) in self.units.iter().flat_map(|u| &u.directives) {
            match d {
                Directive::Ignore(s) => {
                    suppressions.insert(index.line_of(*pos), s);
                }
                Directive::Reference(path) => reference = Some(path.clone()),
            }
        }
        let mut diagnostics: Vec<Diagnostic> = self
            .host_diags
            .iter()
            .chain(self.units.iter().flat_map(|u| &u.diags))
            .filter(|d| !suppressions.get(&index.line_of(d.range.start)).is_some_and(|s| s.covers(&d.code)))
            .cloned()
            .collect();
        rules::finish(&mut diagnostics);
        let kernels = self
            .units
            .iter()
            .flat_map(|u| &u.kernels)
            .map(|k| {
                let estimate = self.estimates.get(&k.name).cloned();
                KernelSummary {
                    name: k.name.clone(),
                    range: k.header_range,
                    persistent: k.has_time_loop && estimate.is_none(),
                    has_time_loop: k.has_time_loop,
                    launch_sites: self.launch_counts.get(&k.name).copied().unwrap_or(0),
                    launches_per_forward: estimate,
                }
            })
            .collect();
        CheckResult {
            diagnostics,
            kernels,
            classes: self.units.iter().flat_map(|u| u.classes.iter().cloned()).collect(),
            reference,
        }
    }

    /// Whether this snapshot was derived from the previous one rather than built afresh.
    pub fn is_incremental(&self) -> bool {
        self.incremental
    }
}
