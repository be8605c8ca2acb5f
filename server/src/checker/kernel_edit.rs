//! An edit inside kernels only. The changed statements are re-read, with
//! [`FileModel::build_partial`], together with what their kernel rules read:
//! the helpers their kernels call, the statements that launch them and the
//! module-level assignments. That is exact only while no host code changed,
//! so this path is taken only when every changed statement, before and after,
//! contributes nothing to host code (no host function, class, module-level
//! loop, call, assignment, sync or launch, no import), defines the same
//! kernel names in the same order with the same parameters and the same
//! pointers loaded and stored (the host rules read those), and, in a
//! candidate, has no finding of the hygiene rules before or after (they report
//! in kernels and read inside them). The host rules' findings move with
//! their statements.

use rustc_hash::FxHashSet as HashSet;
use std::sync::Arc;

use tree_sitter::Node;

use super::matching::*;
use super::run::*;
use super::snapshot::*;
use super::units::*;
use crate::diagnostic::Diagnostic;
use crate::model::Forest;
use crate::model::{FileModel, StubReads};
use crate::rules;

/// What the kernel path re-reads: the changed statements' kernel names
/// before the edit, the statements re-checked, and what their kernel rules
/// read (the kernels calling them, their helpers, the kernels they launch).
struct ReadSet<'p> {
    old_names: Vec<&'p str>,
    recheck: Vec<usize>,
    callers: HashSet<&'p str>,
    names: HashSet<&'p str>,
    helpers: HashSet<String>,
}

pub(super) fn analyze(text: &Arc<str>, tree: &Forest, prev: &Snapshot, m: &Matching) -> Result<Snapshot, &'static str> {
    refuse(prev, m)?;
    if !changed_version_flags(prev, m, text).is_empty() {
        return Err("a line that sets a version flag changed");
    }
    let mut set = read_set(prev, m);
    let (fresh, loose) = reread(text, tree, prev, m, &mut set)?;
    if !loose.is_empty() {
        return Err("a diagnostic outside every statement");
    }
    check_new_callees(prev, m, &set.recheck, &fresh)?;
    assemble(text, tree, prev, m, &set.recheck, fresh)
}

/// The edits this path cannot take, known before anything is read.
fn refuse(prev: &Snapshot, m: &Matching) -> Result<(), &'static str> {
    if m.changed_old.iter().any(|&o| !prev.units[o].facts.neutral) {
        return Err("a changed statement had host code");
    }
    // In a candidate the hygiene rules also report in kernels (KL103 on a
    // kernel's name) and read inside them (KL107 and KL108: calls, attributes
    // and assignments anywhere): a changed statement with a hygiene finding,
    // before or after, is analysed afresh.
    if prev.candidate.is_some()
        && m.changed_old.iter().any(|&o| prev.units[o].facts.diags.iter().any(|d| rules::is_hygiene(&d.code)))
    {
        return Err("a changed statement had a hygiene finding");
    }
    Ok(())
}

/// Adds to `set` what the statements of `from` lead to, until nothing more
/// is found: `step` gives, for a statement, whether it is reached and what it adds.
fn close<'p>(
    prev: &'p Snapshot,
    set: &mut HashSet<&'p str>,
    step: impl Fn(&'p UnitFacts, &HashSet<&'p str>) -> Vec<&'p str>,
) {
    loop {
        let more: Vec<&str> =
            prev.units.iter().flat_map(|u| step(&u.facts, set)).filter(|c| !set.contains(c)).collect();
        if more.is_empty() {
            return;
        }
        set.extend(more);
    }
}

/// Re-checked: the changed statements, those whose kernels call a changed
/// kernel, and the helpers the changed kernels call, directly or through
/// other helpers (KL004 reads what a helper's callers pass); and what their
/// kernel rules read.
fn read_set<'p>(prev: &'p Snapshot, m: &Matching) -> ReadSet<'p> {
    let Matching { nodes, matched, changed_old, .. } = m;
    let old_names: Vec<&str> =
        changed_old.iter().flat_map(|&o| prev.units[o].facts.kernels.iter().map(|k| k.name.as_str())).collect();
    let changed_names: HashSet<&str> = old_names.iter().copied().collect();
    let mut called: HashSet<&str> =
        changed_old.iter().flat_map(|&o| prev.units[o].facts.helper_callees.iter().map(String::as_str)).collect();
    close(prev, &mut called, |f, called| {
        if f.kernels.iter().any(|k| called.contains(k.name.as_str())) {
            f.helper_callees.iter().map(String::as_str).collect()
        } else {
            Vec::new()
        }
    });
    let recheck: Vec<usize> = (0..nodes.len())
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
    close(prev, &mut callers, |f, callers| {
        if f.helper_callees.iter().any(|c| callers.contains(c.as_str())) {
            f.kernels.iter().map(|k| k.name.as_str()).collect()
        } else {
            Vec::new()
        }
    });
    // What their kernel rules read: helpers, launch sites, module-level assignments.
    // The changed statements must keep their kernel names (checked later), so
    // those are known; their helpers are taken from before and checked after.
    let mut names: HashSet<&str> = changed_names;
    let mut helpers: HashSet<String> = HashSet::default();
    for &o in changed_old {
        helpers.extend(prev.units[o].facts.helper_callees.iter().cloned());
    }
    for &i in &recheck {
        if let Some(o) = matched[i] {
            names.extend(prev.units[o].facts.kernels.iter().map(|k| k.name.as_str()));
            helpers.extend(prev.units[o].facts.helper_callees.iter().cloned());
        }
    }
    ReadSet { old_names, recheck, callers, names, helpers }
}

/// Reads the re-checked statements with what their kernel rules read, and
/// checks that the changed ones still hold no host code and the same
/// kernels; once more if a kernel now calls a helper it did not call before.
fn reread(
    text: &Arc<str>,
    tree: &Forest,
    prev: &Snapshot,
    m: &Matching,
    set: &mut ReadSet,
) -> Result<(Vec<Fresh>, Vec<Diagnostic>), &'static str> {
    let Matching { nodes, aliases, matched, changed_old, .. } = m;
    let mut attempt = 0;
    loop {
        // A launch site's grid may name a function another statement defines (`grid_tuple`).
        let launcher_reads: HashSet<&str> = prev
            .units
            .iter()
            .filter(|u| u.facts.launched.iter().any(|k| set.names.contains(k.as_str())))
            .flat_map(|u| u.facts.reads(prev, u.range).iter().map(String::as_str))
            .collect();
        let walk: Vec<Node> = (0..nodes.len())
            .filter(|&i| match matched[i] {
                None => true,
                Some(o) => {
                    let u = &prev.units[o].facts;
                    set.recheck.binary_search(&i).is_ok()
                        || !u.module_assigns.is_empty()
                        || u.kernels.iter().any(|k| set.callers.contains(k.name.as_str()))
                        || u.kernels.iter().any(|k| set.helpers.contains(&k.name))
                        // A caller's launch sites say what its parameters hold (KL004
                        // follows a helper's bound up to them).
                        || u.launched.iter().any(|k| set.names.contains(k.as_str()) || set.callers.contains(k.as_str()))
                        || u.links().defines.iter().any(|d| launcher_reads.contains(d.as_str()))
                }
            })
            .map(|i| nodes[i])
            .collect();
        let model = FileModel::build_partial(text, tree, &walk, aliases);
        // A model without host stubs: no question reads beyond one.
        let stubs = StubReads::default();
        let (fresh, loose) =
            facts(&model, &stubs, (nodes, &m.ranges), &set.recheck, &prev.settings, prev.linked, |i| {
                matched[i].map(|o| &*prev.units[o].facts)
            });
        // The changed statements as they are now: still no host code, the same kernels.
        let now: Vec<&UnitFacts> =
            set.recheck.iter().zip(&fresh).filter(|(i, _)| matched[**i].is_none()).map(|(_, (f, _))| f).collect();
        if now.iter().any(|f| !f.neutral) {
            return Err("a changed statement has host code");
        }
        if !now.iter().flat_map(|f| f.kernels.iter().map(|k| k.name.as_str())).eq(set.old_names.iter().copied()) {
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
            .filter(|c| !set.helpers.contains(*c))
            .cloned()
            .collect();
        if missing.is_empty() {
            if let Some(imports) = &prev.candidate {
                // KL107 and KL108 report on single nodes, given the file's
                // imports: read from the node index of this model, which walked
                // the changed statements.
                for i in (0..nodes.len()).filter(|&i| matched[i].is_none()) {
                    if !node_local_findings(text, imports, nodes[i], Some(model.nodes())).is_empty() {
                        return Err("a changed statement has a hygiene finding");
                    }
                }
            }
            return Ok((fresh, loose));
        }
        // A kernel now calls a name it did not call before: read again with those helpers.
        attempt += 1;
        if attempt > 1 {
            return Err("the helpers did not settle");
        }
        set.helpers.extend(missing);
    }
}

/// A changed kernel that now calls a helper it did not call before changes
/// what that helper's callers pass: the helper must have been re-checked.
fn check_new_callees(prev: &Snapshot, m: &Matching, recheck: &[usize], fresh: &[Fresh]) -> Result<(), &'static str> {
    let matched = &m.matched;
    let rechecked: HashSet<&str> = recheck
        .iter()
        .filter_map(|&i| matched[i])
        .flat_map(|o| prev.units[o].facts.kernels.iter().map(|k| k.name.as_str()))
        .collect();
    let new_callees = recheck
        .iter()
        .zip(fresh)
        .filter(|(i, _)| matched[**i].is_none())
        .flat_map(|(_, (f, _))| f.helper_callees.iter());
    for c in new_callees {
        let defined_elsewhere = (0..m.nodes.len())
            .any(|i| matched[i].is_some_and(|o| prev.units[o].facts.kernels.iter().any(|k| &k.name == c)));
        if defined_elsewhere && !rechecked.contains(c.as_str()) {
            return Err("a changed kernel calls a helper it did not call");
        }
    }
    Ok(())
}

/// The new snapshot: the re-checked statements as read (keeping the host
/// rules' findings of those that did not change); everything else moves with its statement.
fn assemble(
    text: &Arc<str>,
    tree: &Forest,
    prev: &Snapshot,
    m: &Matching,
    recheck: &[usize],
    fresh: Vec<Fresh>,
) -> Result<Snapshot, &'static str> {
    let Matching { nodes, aliases, matched, .. } = m;
    let mut fresh = fresh.into_iter();
    let mut units = Vec::with_capacity(nodes.len());
    for (i, &range) in m.ranges.iter().enumerate() {
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
        tree: tree.clone(),
        tl_aliases: aliases.0.clone(),
        triton_aliases: aliases.1.clone(),
        triton_imported: m.triton_imported,
        units,
        host_diags: m.moved(prev, &prev.host_diags)?,
        estimates: prev.estimates.clone(),
        launch_counts: prev.launch_counts.clone(),
        path: Path::Kernels,
        stubs: 0,
        host_stubs: 0,
        candidate: prev.candidate.clone(),
        imports: prev.imports.clone(),
        context: prev.context.clone(),
        linked: prev.linked,
        walk_again: prev.walk_again.iter().filter_map(|&o| m.old_to_new[o]).collect(),
        builds: 0,
    })
}
