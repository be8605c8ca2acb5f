//! An edit of host code (a launching helper, `forward`, a class), or of a
//! kernel statement in a way the host rules read. The host rules run again,
//! on a model in which every statement that only defines kernels the edit
//! cannot affect is a stub (its kernels' headers are read, not their bodies;
//! what the host rules ask of them comes from the views the snapshot kept),
//! and those statements keep their kernel-rule, KL005 and per-node (KL107,
//! KL108) findings. Once a host-path analysis has kept how each statement's
//! host code links to the others (`HostLinks`), a plain top-level `def` of
//! host code that the edit cannot reach is a **host stub** too
//! (`host_stubs`): only its header and its calls to functions of this file
//! are read (`model::HostStub`), and it keeps its own findings; a rule that
//! needs more of it (its launch sites, syncs, loops) marks the model and the
//! analysis is made again with that function walked.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::borrow::Cow;
use std::sync::Arc;

use super::full::PARALLEL_INDEX_BYTES;
use super::matching::*;
use super::run::*;
use super::snapshot::*;
use super::units::*;
use crate::diagnostic::Diagnostic;
use crate::model::candidate;
use crate::model::Forest;
use crate::model::{range_of, FileModel, KernelHostView, Stub, StubReads};
use crate::text::TextRange;

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
/// those that reach into other statements included. A question that asks a
/// stub what it does not keep records it in the attempt's `StubReads`
/// (the rules get it in their `Scope`), and the statements are read again
/// with that stub walked.
///
/// A module-level name a changed statement assigns or imports, before or
/// after the edit (as a statement that fails to parse often leaves the rest
/// of its function's body at module level), may change what any statement
/// reads of it: every statement that may read it (`UnitFacts::reads`) is
/// read again, with the kernels it defines and launches, and asked its
/// per-node findings (KL107, KL108: they read the file's imports by name)
/// with the imports as they are now.
///
/// Refused (the file is analysed afresh) when a changed statement, before or
/// after, imports `*`, when the names `triton` and `triton.language` are
/// imported as change (`matching`), or when the file stops or starts being
/// a candidate.
pub(super) fn analyze(text: &Arc<str>, tree: &Forest, prev: &Snapshot, m: &Matching) -> Result<Snapshot, &'static str> {
    refuse(prev, m)?;
    let mut plan = Plan::new(prev, m);
    // A version flag set or unset: what its `if` guards is read again (KL005).
    let flags = changed_version_flags(prev, m, text);
    if !flags.is_empty() {
        plan.globals.extend(flags);
        plan.read_globals(prev);
    }
    let mut attempt = 0;
    loop {
        attempt += 1;
        if attempt > 6 {
            return Err("the statements to read did not settle");
        }
        plan.close_walked(prev, m);
        let choice = plan.choose(prev, m);
        // The host stubs this attempt's questions read beyond what they keep.
        let stubs = StubReads::default();
        let model = build(text, tree, prev, m, &choice, &stubs)?;
        let read: Vec<usize> = (0..m.nodes.len()).filter(|&i| !choice.stub[i] && !choice.host_stub[i]).collect();
        // The host rules (KL107 and KL108 are asked below, of the changed
        // statements only) beside the facts of the statements read: in a
        // large file on a second thread (a host edit's analysis at 5,000
        // lines, p50 1.61 -> 1.39 ms).
        let beside = text.len() >= PARALLEL_INDEX_BYTES;
        let read_facts = || {
            facts(&model, &stubs, (&m.nodes, &m.ranges), &read, &prev.settings, true, |i| {
                m.matched[i].map(|o| &*prev.units[o].facts)
            })
        };
        let ((fresh, loose), host) = host_rules_beside(&model, &stubs, &prev.settings, beside, true, read_facts);
        if plan.learn(prev, m, &choice, &model, &read, &fresh)? {
            continue;
        }
        let candidate = candidate::is_candidate(&model);
        if candidate != prev.candidate.is_some() {
            return Err("the file became, or stopped being, a candidate");
        }
        let context = host_context(&model);
        // A rule needed what a host stub does not keep: that stub is walked
        // (no host stubs after three such retries, or when what the host
        // stubs' own findings read of the candidate changed).
        let any_host_stub = choice.host_stub.iter().any(|s| *s);
        let read_stubs = stubs.starts(&model);
        if any_host_stub && !read_stubs.is_empty() {
            if attempt < 4 {
                plan.forced.extend(read_stubs.iter().filter_map(|&at| unit_of(&m.ranges, at)));
            } else {
                plan.host_stubs_on = false;
            }
            continue;
        }
        if any_host_stub && (context != prev.context || context.stores) {
            plan.host_stubs_on = false;
            continue;
        }
        let found = Found { read: &read, ranges: &m.ranges, fresh, loose, host };
        // The imports as they are now (where they are now: the per-node findings name the modules' positions).
        let imports = Arc::new(candidate::imports(&model).clone());
        let asked = candidate.then_some(&*imports);
        let (fresh, host_diags, on_stubs) = place(text, &model, prev, m, &choice, found, asked, &plan.reading)?;
        let units = assemble(prev, m, &choice, &model, fresh, on_stubs)?;
        // The statements carried from last time are walked again next time
        // only while the changed statements keep their host loops (a loop
        // that called them, now deleted, was the reason).
        let loops_before: u32 = m.changed_old.iter().map(|&o| prev.units[o].facts.host_loops).sum();
        let loops_now: u32 =
            units.iter().zip(&m.matched).filter(|(_, o)| o.is_none()).map(|(u, _)| u.facts.host_loops).sum();
        if loops_now < loops_before {
            plan.forced.retain(|i| !plan.carried.contains(i));
        }
        let mut walk_again: Vec<usize> = plan.forced.iter().copied().collect();
        walk_again.sort_unstable();
        let (estimates, launch_counts) = launch_maps(prev, m, &read, &units);
        return Ok(Snapshot {
            settings: prev.settings.clone(),
            text: text.clone(),
            tree: tree.clone(),
            estimates,
            tl_aliases: m.aliases.0.clone(),
            triton_aliases: m.aliases.1.clone(),
            triton_imported: m.triton_imported,
            launch_counts,
            units,
            host_diags,
            path: Path::Host,
            stubs: choice.stub.iter().filter(|s| **s).count(),
            host_stubs: choice.host_stub.iter().filter(|s| **s).count(),
            candidate: candidate.then(|| imports.clone()),
            imports,
            context,
            linked: true,
            walk_again,
            builds: attempt,
        });
    }
}

/// The new snapshot's launch counts and estimates per kernel. Only the
/// statements read afresh (`read`, new indexes) have facts other than last
/// time's. Where they launch the same kernels as often as what they replace
/// (the changed statements and the old facts of those read again), the
/// counts are the previous snapshot's. The estimates are merged in order of
/// position, so they are the previous snapshot's only where neither side
/// holds one. Otherwise each is merged from every statement.
#[allow(clippy::type_complexity)]
fn launch_maps(
    prev: &Snapshot,
    m: &Matching,
    read: &[usize],
    units: &[Unit],
) -> (Arc<HashMap<String, String>>, Arc<HashMap<String, usize>>) {
    let replaced = m.changed_old.iter().chain(read.iter().filter_map(|&i| m.matched[i].as_ref()));
    let before: Vec<&UnitFacts> = replaced.map(|&o| &*prev.units[o].facts).collect();
    let now: Vec<&UnitFacts> = read.iter().map(|&i| &*units[i].facts).collect();
    let counts = if launch_sites(before.iter().copied()) == launch_sites(now.iter().copied()) {
        prev.launch_counts.clone()
    } else {
        Arc::new(merged_launch_counts(units))
    };
    let no_estimates = |facts: &[&UnitFacts]| facts.iter().all(|f| f.links().estimates.is_empty());
    let estimates = if no_estimates(&before) && no_estimates(&now) {
        prev.estimates.clone()
    } else {
        Arc::new(merged_estimates(units))
    };
    (estimates, counts)
}

/// The edits this path cannot take: a changed statement that imported `*`
/// (one that does now is found once it is read, in `Plan::learn`).
fn refuse(prev: &Snapshot, m: &Matching) -> Result<(), &'static str> {
    if m.changed_old.iter().any(|&o| prev.units[o].facts.import_binds.iter().any(|b| b == "*")) {
        return Err("a changed statement imported *");
    }
    Ok(())
}

/// What the host path learns from one attempt to the next: which kernels
/// must be walked, what the changed statements define and call in loops, and
/// which statements must be walked all the same.
struct Plan<'p> {
    /// For each old statement: whether its kernels can be stubs (it defines
    /// kernels and nothing else, no syntax error, and its host-rule findings
    /// are the per-node ones).
    stubbable: Vec<bool>,
    /// Kernels walked and checked: those a changed statement defined or
    /// launched (their kernel rules read their launch sites), with every
    /// kernel they call or that calls them, and every kernel of a statement
    /// that is not a stub.
    walked: HashSet<String>,
    /// Kernel names defined in the file (before the edit, borrowed from the
    /// previous snapshot, and those found since).
    defined: HashSet<Cow<'p, str>>,
    /// For host stubs (`host_stubs`): what the changed statements define
    /// and call inside loops, before the edit and, once read, after it.
    changed_defines: HashSet<String>,
    changed_loop_calls: HashSet<String>,
    /// Statements walked all the same (new positions); `carried`: those of
    /// them the last analysis had walked all the same (`Snapshot::walk_again`).
    forced: HashSet<usize>,
    carried: HashSet<usize>,
    /// The module-level names the changed statements assign, before the edit
    /// and, once read, after it; `reading[o]`: whether old statement `o` may read one.
    globals: HashSet<String>,
    reading: Vec<bool>,
    /// The names a changed statement's imports bind, before the edit and,
    /// once read, after it: those whose binding the edit changed (the
    /// imports before and after name different modules for them) join `globals`.
    import_names: HashSet<String>,
    /// Whether a changed statement, before or after, imports: the per-node
    /// findings of the statements read are asked with the imports as they are now.
    imports_changed: bool,
    /// Host stubs need the previous snapshot's links; the first host-path
    /// analysis after a fresh one reads every statement and makes them.
    host_stubs_on: bool,
}

/// One attempt's choice: which statements now are read as kernel stubs, which as host stubs.
struct Choice {
    stub: Vec<bool>,
    host_stub: Vec<bool>,
}

impl<'p> Plan<'p> {
    fn new(prev: &'p Snapshot, m: &Matching) -> Plan<'p> {
        let changed_old = &m.changed_old;
        let stubbable: Vec<bool> = prev
            .units
            .iter()
            .map(|u| {
                let f = &u.facts;
                f.neutral
                    && !f.kernels.is_empty()
                    && !f.has_error
                    && f.diags.iter().all(|d| !is_host_diag(d) || is_node_local(&d.code))
            })
            .collect();
        let walked: HashSet<String> = changed_old
            .iter()
            .flat_map(|&o| {
                let f = &prev.units[o].facts;
                f.launched.iter().cloned().chain(f.kernels.iter().map(|k| k.name.clone()))
            })
            .collect();
        let defined: HashSet<Cow<'p, str>> =
            prev.units.iter().flat_map(|u| u.facts.kernels.iter().map(|k| Cow::Borrowed(k.name.as_str()))).collect();
        let changed_defines: HashSet<String> =
            changed_old.iter().flat_map(|&o| prev.units[o].facts.defined_names().cloned()).collect();
        let changed_loop_calls: HashSet<String> =
            changed_old.iter().flat_map(|&o| prev.units[o].facts.links().calls_in_loops_to.iter().cloned()).collect();
        // Statements a rule needed walked last time (`Snapshot::walk_again`) are
        // walked from the start (an RNN's time loop reads its step helper on every
        // edit), unless a changed statement called something in a loop: the
        // reason may be gone, and a stub that is read is found again.
        let mut forced: HashSet<usize> = HashSet::default();
        if changed_loop_calls.is_empty() {
            forced.extend(prev.walk_again.iter().filter_map(|&o| m.old_to_new[o]));
        }
        let globals: HashSet<String> =
            changed_old.iter().flat_map(|&o| prev.units[o].facts.module_assigns.iter().cloned()).collect();
        let import_names: HashSet<String> =
            changed_old.iter().flat_map(|&o| prev.units[o].facts.import_binds.iter().cloned()).collect();
        let imports_changed = !import_names.is_empty();
        let mut plan = Plan {
            stubbable,
            walked,
            defined,
            changed_defines,
            changed_loop_calls,
            carried: forced.clone(),
            forced,
            globals,
            import_names,
            imports_changed,
            reading: vec![false; prev.units.len()],
            host_stubs_on: prev.linked,
        };
        plan.read_globals(prev);
        plan
    }

    /// Marks the statements that may read a name of `globals`, and walks the
    /// kernels they define and launch (a launch site's constants may read it).
    fn read_globals(&mut self, prev: &Snapshot) {
        if self.globals.is_empty() {
            return;
        }
        for (o, u) in prev.units.iter().enumerate() {
            let f = &u.facts;
            if self.reading[o] || !self.globals.iter().any(|g| f.reads(prev, u.range).binary_search(g).is_ok()) {
                continue;
            }
            self.reading[o] = true;
            self.walked.extend(f.kernels.iter().map(|k| k.name.clone()).chain(f.launched.iter().cloned()));
        }
    }

    /// Adds the kernels of statements that cannot be stubs, and closes
    /// `walked` over helper calls, both ways: a statement is linked to the
    /// kernels it defines and to the kernels of this file its kernels call
    /// (calls to names no kernel here defines, `range` or a library's
    /// function, link nothing); each statement is visited once.
    fn close_walked(&mut self, prev: &'p Snapshot, m: &Matching) {
        for o in m.matched.iter().flatten().filter(|&&o| !self.stubbable[o]) {
            self.walked.extend(prev.units[*o].facts.kernels.iter().map(|k| k.name.clone()));
        }
        // A statement links the kernels it defines and the kernels of this
        // file its kernels call. One that links a single name (a statement
        // defining one kernel that calls none) adds nothing a walk through it
        // has not already: it is left out (most statements of a large file).
        let defined = &self.defined;
        let helpers = |f: &'p UnitFacts| f.helper_callees.iter().filter(|c| defined.contains(c.as_str()));
        let mut links: Vec<Vec<&'p str>> = Vec::new();
        for u in &prev.units {
            let f = &u.facts;
            if f.kernels.len() + helpers(f).count() < 2 {
                continue;
            }
            links.push(f.kernels.iter().map(|k| k.name.as_str()).chain(helpers(f).map(String::as_str)).collect());
        }
        let mut by_name: HashMap<&str, Vec<usize>> = HashMap::default();
        for (l, names) in links.iter().enumerate() {
            for n in names {
                by_name.entry(n).or_default().push(l);
            }
        }
        let mut queue: Vec<String> = self.walked.iter().cloned().collect();
        let mut visited = vec![false; links.len()];
        while let Some(name) = queue.pop() {
            for &l in by_name.get(name.as_str()).into_iter().flatten() {
                if std::mem::replace(&mut visited[l], true) {
                    continue;
                }
                for &n in &links[l] {
                    if !self.walked.contains(n) {
                        self.walked.insert(n.to_string());
                        queue.push(n.to_string());
                    }
                }
            }
        }
    }

    /// The statements now read as stubs: kernel statements none of whose
    /// kernels is walked, and host functions the edit cannot reach.
    fn choose(&self, prev: &Snapshot, m: &Matching) -> Choice {
        let matched = &m.matched;
        let stub: Vec<bool> = (0..m.nodes.len())
            .map(|i| {
                matched[i].is_some_and(|o| {
                    self.stubbable[o]
                        && !self.reading[o]
                        && !prev.units[o].facts.kernels.iter().any(|k| self.walked.contains(&k.name))
                })
            })
            .collect();
        let mut host_stub = if self.host_stubs_on {
            host_stubs(prev, matched, &self.changed_defines, &self.changed_loop_calls, &self.walked, &self.forced)
        } else {
            vec![false; m.nodes.len()]
        };
        for (i, s) in host_stub.iter_mut().enumerate() {
            *s &= matched[i].is_some_and(|o| !self.reading[o]);
        }
        Choice { stub, host_stub }
    }

    /// What this attempt's reading shows must be walked too; `Ok(true)` if
    /// the statements are to be read again. The changed statements as they
    /// are now: the module-level names they assign (and the statements that
    /// may read them, with their kernels) added; what they launch, and the kernels
    /// their kernels call, walked; a kernel they define now that a stub
    /// calls, or whose name a stub defines too, walked with that stub; a host
    /// stub that reaches a name they define or call in loops now, or that
    /// launches a kernel walked now, walked.
    fn learn(
        &mut self,
        prev: &Snapshot,
        m: &Matching,
        choice: &Choice,
        model: &FileModel,
        read: &[usize],
        fresh: &[Fresh],
    ) -> Result<bool, &'static str> {
        let (matched, new_len) = (&m.matched, m.nodes.len());
        let stub_names: HashSet<&str> = (0..new_len)
            .filter(|&i| choice.stub[i])
            .filter_map(|i| matched[i])
            .flat_map(|o| {
                let f = &prev.units[o].facts;
                f.helper_callees.iter().chain(f.kernels.iter().map(|k| &k.name)).map(String::as_str)
            })
            .collect();
        let mut missing = Vec::new();
        let mut more_names = false;
        let mut more_globals = false;
        for (_, (f, _)) in read.iter().zip(fresh).filter(|(&i, _)| matched[i].is_none()) {
            if f.import_binds.iter().any(|b| b == "*") {
                return Err("a changed statement imports *");
            }
            self.imports_changed |= !f.import_binds.is_empty();
            self.import_names.extend(f.import_binds.iter().cloned());
            for g in &f.module_assigns {
                more_globals |= self.globals.insert(g.clone());
            }
            missing.extend(f.launched.iter().filter(|k| !self.walked.contains(*k)).cloned());
            let helpers =
                f.helper_callees.iter().filter(|c| self.defined.contains(c.as_str()) && !self.walked.contains(*c));
            missing.extend(helpers.cloned());
            for k in &f.kernels {
                if !self.walked.contains(&k.name) && stub_names.contains(k.name.as_str()) {
                    missing.push(k.name.clone());
                }
            }
        }
        for (_, (f, _)) in read.iter().zip(fresh).filter(|(&i, _)| matched[i].is_none()) {
            for d in f.defined_names() {
                more_names |= self.changed_defines.insert(d.clone());
            }
            for c in &f.links().calls_in_loops_to {
                more_names |= self.changed_loop_calls.insert(c.clone());
            }
        }
        // A kernel walked now whose launch site is in a host stub: its kernel rules read that site.
        let walked_now: HashSet<&str> =
            model.kernels.iter().filter(|k| k.stub.is_none()).map(|k| k.name.as_str()).collect();
        let launching_stubs: Vec<usize> = (0..new_len)
            .filter(|&i| choice.host_stub[i])
            .filter(|&i| {
                matched[i].is_some_and(|o| prev.units[o].facts.launched.iter().any(|k| walked_now.contains(k.as_str())))
            })
            .collect();
        // The element widths the host code names, now against before: a
        // kernel rule (KL006) reads them when nothing closer names a width;
        // such kernels read as stubs are walked.
        let before = prev.units.iter().fold(0, |w, u| w | u.facts.widths);
        let mut now = fresh.iter().fold(0, |w, (f, _)| w | f.widths);
        for (i, o) in matched.iter().enumerate() {
            if let Some(o) = o.filter(|_| choice.stub[i] || choice.host_stub[i]) {
                now |= prev.units[o].facts.widths;
            }
        }
        if now != before {
            let stubs = (0..new_len).filter(|&i| choice.stub[i]).filter_map(|i| matched[i]);
            missing.extend(
                stubs.flat_map(|o| {
                    prev.units[o].facts.kernels.iter().filter(|k| k.reads_widths).map(|k| k.name.clone())
                }),
            );
        }
        let any_host_stub = choice.host_stub.iter().any(|s| *s);
        // A name an edited import binds is read again only if what it stands
        // for changed (a statement that fails to parse may bind `triton` from
        // the next line's decorator, as `import triton` already does).
        if self.imports_changed {
            let now = candidate::imports(model);
            for name in &self.import_names {
                if now.full_name(name) != prev.imports.full_name(name) {
                    more_globals |= self.globals.insert(name.clone());
                }
            }
        }
        if more_globals {
            let walked_before = self.walked.len();
            self.read_globals(prev);
            // Only a statement now read that was a stub, or a kernel now walked, asks for another reading.
            let newly = (0..new_len)
                .any(|i| matched[i].is_some_and(|o| self.reading[o]) && (choice.stub[i] || choice.host_stub[i]));
            more_globals = self.walked.len() > walked_before || newly;
        }
        if missing.is_empty() && !(more_names && any_host_stub) && launching_stubs.is_empty() && !more_globals {
            return Ok(false);
        }
        self.defined.extend(missing.iter().map(|n| Cow::Owned(n.clone())));
        self.walked.extend(missing);
        self.forced.extend(launching_stubs);
        Ok(true)
    }
}

/// The model of this attempt: stubs read from the snapshot, the rest walked.
fn build<'t>(
    text: &'t str,
    tree: &'t Forest,
    prev: &Snapshot,
    m: &Matching<'t>,
    choice: &Choice,
    stubs: &StubReads,
) -> Result<FileModel<'t>, &'static str> {
    let matched = &m.matched;
    let views: Vec<Vec<Arc<KernelHostView>>> = (0..m.nodes.len())
        .map(|i| match matched[i].filter(|_| choice.stub[i]) {
            Some(o) => prev.units[o].facts.kernels.iter().map(|k| k.host_view.clone()).collect(),
            None => Vec::new(),
        })
        .collect();
    let units: Vec<crate::model::PartialUnit> = (0..m.nodes.len())
        .map(|i| {
            let how = if choice.stub[i] {
                Some(Stub::Kernels(views[i].as_slice()))
            } else if choice.host_stub[i] {
                matched[i].and_then(|o| prev.units[o].facts.links().host_stub.as_ref()).map(Stub::Host)
            } else {
                None
            };
            (m.nodes[i], how)
        })
        .collect();
    // A second thread pays for itself only on enough text walked (stubs are not).
    let walked_bytes: usize =
        units.iter().zip(&m.ranges).filter(|((_, how), _)| how.is_none()).map(|(_, r)| r.len()).sum();
    let two_threads = walked_bytes >= PARALLEL_INDEX_BYTES;
    FileModel::build_stubbed(text, tree, &units, &m.aliases, two_threads, stubs)
        .ok_or("a stub's kernels are not as they were")
}

/// What an attempt found: the statements read (`read`, new indexes) and
/// their facts, KL005 findings outside every statement, the host rules' findings.
struct Found<'a> {
    read: &'a [usize],
    ranges: &'a [TextRange],
    fresh: Vec<Fresh>,
    loose: Vec<Diagnostic>,
    host: Vec<Diagnostic>,
}

/// Puts each host-rule finding where it is kept: in the facts of the
/// statement read that holds it, on a kernel stub (returned per statement),
/// or with the file; a host stub keeps its own from the previous snapshot.
/// Adds the per-node findings (KL107, KL108) of the statements read, asked
/// of `imports` where the statement changed or may read a changed name (`reading`).
#[allow(clippy::type_complexity)]
fn place(
    text: &str,
    model: &FileModel,
    prev: &Snapshot,
    m: &Matching,
    choice: &Choice,
    found: Found,
    imports: Option<&candidate::Imports>,
    reading: &[bool],
) -> Result<(Vec<Fresh>, Vec<Diagnostic>, HashMap<usize, Vec<Diagnostic>>), &'static str> {
    let Found { read, ranges, mut fresh, loose, host } = found;
    let (stub, host_stub) = (&choice.stub, &choice.host_stub);
    let mut slot = vec![usize::MAX; m.nodes.len()];
    for (s, &i) in read.iter().enumerate() {
        slot[i] = s;
    }
    let mut host_diags = loose;
    let mut on_stubs: HashMap<usize, Vec<Diagnostic>> = HashMap::default();
    // A host stub keeps the host rules' findings that start in it (the
    // model holds only its header): those lying wholly in it in its
    // facts, the others moved from the previous snapshot.
    let in_host_stub = |pos: usize| unit_of(ranges, pos).is_some_and(|i| host_stub[i]);
    for d in host {
        match home(ranges, &d) {
            Some(i) if host_stub[i] => {}
            Some(i) if stub[i] => on_stubs.entry(i).or_default().push(d),
            Some(i) => fresh[slot[i]].0.diags.push(d),
            None if in_host_stub(d.range.start) => {}
            None => host_diags.push(d),
        }
    }
    if host_stub.iter().any(|s| *s) {
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
    if let Some(imports) = imports {
        let enabled = |code: &str| prev.settings.enabled(code);
        for (s, &i) in read.iter().enumerate() {
            let found = match m.matched[i].filter(|&o| !reading[o]) {
                Some(o) => {
                    let old = &prev.units[o];
                    let delta = old.delta_at(ranges[i].start);
                    old.facts.diags.iter().filter(|d| is_node_local(&d.code)).map(|d| shifted(d, delta)).collect()
                }
                None => node_local_findings(text, imports, m.nodes[i], Some(model.nodes())),
            };
            fresh[s].0.diags.extend(found.into_iter().filter(|d| enabled(&d.code)));
        }
    }
    Ok((fresh, host_diags, on_stubs))
}

/// The statements of the new snapshot: host stubs as they were (moved),
/// statements read as read, kernel stubs as they were with the host rules'
/// findings on them.
fn assemble(
    prev: &Snapshot,
    m: &Matching,
    choice: &Choice,
    model: &FileModel,
    fresh: Vec<Fresh>,
    mut on_stubs: HashMap<usize, Vec<Diagnostic>>,
) -> Result<Vec<Unit>, &'static str> {
    let matched = &m.matched;
    let mut fresh = fresh.into_iter();
    let mut out = Vec::with_capacity(m.nodes.len());
    for (i, &range) in m.ranges.iter().enumerate() {
        if choice.host_stub[i] {
            let old = &prev.units[matched[i].ok_or("a host stub was not matched")?];
            let delta = old.delta_at(range.start);
            out.push(Unit { facts: old.facts.clone(), range, delta, foreign: m.moved(prev, &old.foreign)? });
            continue;
        }
        if !choice.stub[i] {
            let (facts, foreign) = fresh.next().ok_or("a statement was not re-read")?;
            out.push(Unit { facts: Arc::new(facts), range, delta: 0, foreign });
            continue;
        }
        let old = &prev.units[matched[i].ok_or("a stub was not matched")?];
        let delta = old.delta_at(range.start);
        let foreign = m.moved(prev, &old.foreign)?;
        let old_facts = with_headers(&old.facts, model, range);
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
    Ok(out)
}

/// A kernel stub from before the first host-path analysis keeps no header:
/// the model read it, and its view keeps it from now on.
fn with_headers(facts: &Arc<UnitFacts>, model: &FileModel, range: TextRange) -> Arc<UnitFacts> {
    if facts.kernels.iter().all(|k| k.host_view.header.is_some()) {
        return facts.clone();
    }
    let mut facts = (**facts).clone();
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
/// caller (`host_context`); a question that needs more of a stub records it
/// (`model::StubReads`) and the caller reads again with it walked.
pub(super) fn host_stubs(
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
    let mut callers_of: HashMap<&str, Vec<usize>> = HashMap::default();
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
