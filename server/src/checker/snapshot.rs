//! The [`Snapshot`] of one version of a file: for every top-level statement
//! of the module (a child of the root: a kernel, a host function, a class,
//! an import, a comment...) what the analysis found in it (`UnitFacts`: the
//! diagnostics of the kernel rules for the kernels defined there and of
//! KL005 for its `tl.*` attributes, its kernel summaries, classes and
//! `# kernel-lsp:` comments, and the few facts other statements read), plus
//! the host rules' findings that span statements and the launch figures of
//! the kernel summaries; and the [`CheckResult`] it gives
//! ([`Snapshot::result`]: suppressions applied, in order).
//!
//! Facts are kept at the positions they were read at and shared between
//! snapshots while their statement does not change (`Unit::delta` moves them).

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use super::matching::*;
use super::units::*;
use super::{CheckResult, ClassSummary, KernelSummary};
use crate::config::Settings;
use crate::diagnostic::Diagnostic;
use crate::model::candidate::Imports;
use crate::model::Forest;
use crate::model::{Directive, FileModel, HostStub, KernelHostView};
use crate::rules::{self};
use crate::text::{LineIndex, TextRange};

/// The analysis of one version of a file, kept to analyse the next version incrementally.
pub struct Snapshot {
    pub(super) settings: Settings,
    /// The text analysed, to tell which statements an edit left as they were.
    pub(super) text: Arc<str>,
    /// Its tree (shared with the document's while they are the same), for
    /// the syntax tree of a statement with an error whose text matches.
    pub(super) tree: Forest,
    pub(super) tl_aliases: Vec<String>,
    pub(super) triton_aliases: Vec<String>,
    /// Whether the file imports Triton anywhere (`model::triton_imported`).
    pub(super) triton_imported: bool,
    pub(super) units: Vec<Unit>,
    /// Host-rule diagnostics (KL001, KL010) that span several statements,
    /// and anything outside every statement; in current positions.
    pub(super) host_diags: Vec<Diagnostic>,
    /// Kernel name -> launches-per-forward estimate (`model::launch_estimates`), for the summaries.
    /// Shared with the next snapshot where an edit changes no launch (most keystrokes).
    pub(super) estimates: Arc<HashMap<String, String>>,
    /// Kernel name -> launch sites; shared as `estimates` is.
    pub(super) launch_counts: Arc<HashMap<String, usize>>,
    /// How this snapshot was made.
    pub(super) path: Path,
    /// Statements read as stubs (the host path), for tests and benchmarks:
    /// kernel statements, and host functions (`host_stubs`).
    pub(super) stubs: usize,
    pub(super) host_stubs: usize,
    /// What the host stubs' own findings read of a candidate (`host_context`).
    pub(super) context: HostContext,
    /// Statements that could be host stubs but that a rule needed walked
    /// (recorded in `model::StubReads`) or that launch a walked kernel, in the last
    /// host-path analysis: the next one walks them from the start instead of
    /// finding out again.
    pub(super) walk_again: Vec<usize>,
    /// How many models the host path built for this analysis (a retry after a
    /// stub was read builds another); 0 on the other paths.
    pub(super) builds: usize,
    /// Whether the statements' facts hold their host links and host stubs
    /// (`HostLinks`, with their host stubs) and their kernels' headers
    /// (`KernelHostView::header`): not after a fresh analysis
    /// (a file opened and never edited keeps none), from the first host-path
    /// analysis on, which reads every statement but the kernel stubs.
    pub(super) linked: bool,
    /// For a KernelBench candidate (a `ModelNew` file), whose hygiene rules
    /// (KL101-KL109) read the whole file: the imports they qualify names with.
    pub(super) candidate: Option<Arc<Imports>>,
    /// The file's imports, candidate or not: what a name an edited import
    /// binds stood for (`host_edit`: only a name whose binding changed is read again).
    pub(super) imports: Arc<Imports>,
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
pub(super) struct Unit {
    pub(super) facts: Arc<UnitFacts>,
    pub(super) range: TextRange,
    /// Current position minus the position `facts` were read at.
    pub(super) delta: isize,
    /// Kernel-rule diagnostics of the kernels here that reach into other
    /// statements (a launch site, a module constant); in current positions.
    pub(super) foreign: Vec<Diagnostic>,
}

impl Unit {
    /// [`Unit::delta`] for this statement once it starts at `start`.
    pub(super) fn delta_at(&self, start: usize) -> isize {
        self.delta + (start as isize - self.range.start as isize)
    }
}

/// What one top-level statement contributes, at the positions it was read at.
#[derive(Debug, Clone)]
pub(super) struct UnitFacts {
    /// The statement's node kind.
    pub(super) kind: u16,
    /// Whether the statement has a syntax error: error recovery may read the
    /// same text differently, so such a statement is reused only if it parsed
    /// the same way (its syntax tree, in `Snapshot::tree`, is compared when
    /// its text matches: a statement being typed in is never walked for it).
    pub(super) has_error: bool,
    /// Contributes nothing to host code (see the module doc).
    pub(super) neutral: bool,
    pub(super) kernels: Vec<KernelFacts>,
    /// Names the kernels defined here call that are not `tl.*` (possible `@triton.jit` helpers).
    pub(super) helper_callees: Vec<String>,
    /// Kernels launched from here.
    pub(super) launched: Vec<String>,
    /// The module-level names it assigns (read by constant evaluation and
    /// name lookups elsewhere), as written (a target may be `x.y` or `x[0]`).
    pub(super) module_assigns: Vec<String>,
    /// The names it may read from the module scope (`model::module_reads`),
    /// sorted, read from the snapshot's tree the first time a later edit asks
    /// ([`UnitFacts::reads`]): a statement being typed in is never walked for
    /// them. A statement that may read a module-level name an edit assigns is
    /// read again, with the kernels it defines and launches.
    pub(super) reads: std::sync::OnceLock<Vec<String>>,
    /// The names its import statements bind (`model::import_binds`; `*` for a wildcard).
    pub(super) import_binds: Vec<String>,
    /// How many host loops (`for`, `while`) it holds, as walked (none for a host stub).
    pub(super) host_loops: u32,
    /// The element widths its host code (its text less its kernels) names
    /// (`smem::width_families`): KL006 falls back on the whole file's.
    pub(super) widths: u8,
    /// Before suppression, lying wholly in this statement: the kernel rules'
    /// for the kernels defined here, KL005's for attributes here, the host rules'.
    pub(super) diags: Vec<Diagnostic>,
    pub(super) classes: Vec<ClassSummary>,
    pub(super) directives: Vec<(usize, Directive)>,
    /// How its host code links to other statements; `None` for none (most
    /// statements that only define kernels): a snapshot holds one per statement.
    pub(super) links: Option<Box<HostLinks>>,
}

/// How a statement's host code links to other statements (`host_links`).
#[derive(Debug, Clone, Default)]
pub(super) struct HostLinks {
    /// The names the host functions and classes defined here bind (a class as
    /// `class:NAME`; the kernels defined here are in `UnitFacts::kernels`):
    /// what a call elsewhere may reach ([`call_token`]).
    pub(super) defines: Vec<String>,
    /// The names calls of host code here may reach ([`call_token`]) and the
    /// kernels its `name[grid](...)` calls name; the names of calls inside a loop.
    pub(super) calls_to: Vec<String>,
    pub(super) calls_in_loops_to: Vec<String>,
    /// Launch sites here, per kernel name.
    pub(super) launch_sites: Vec<(String, usize)>,
    /// The launches-per-forward estimates of the time loops here
    /// (`model::launch_estimates`): (the start of the function holding the
    /// loop, `None` for the module scope; kernel; estimate), in the order the
    /// model finds them.
    pub(super) estimates: Vec<(Option<usize>, String, String)>,
    /// What the host path reads of this statement when it is a host stub (a
    /// plain `def` of host code, see `host_stub_of`); `None` if it cannot be one.
    pub(super) host_stub: Option<Arc<HostStub>>,
}

pub(super) static NO_LINKS: HostLinks = HostLinks {
    defines: Vec::new(),
    calls_to: Vec::new(),
    calls_in_loops_to: Vec::new(),
    launch_sites: Vec::new(),
    estimates: Vec::new(),
    host_stub: None,
};

impl UnitFacts {
    pub(super) fn links(&self) -> &HostLinks {
        self.links.as_deref().unwrap_or(&NO_LINKS)
    }

    /// The names defined here that a call or launch elsewhere may reach: host functions, classes, kernels.
    pub(super) fn defined_names(&self) -> impl Iterator<Item = &String> {
        self.links().defines.iter().chain(self.kernels.iter().map(|k| &k.name))
    }
}

#[derive(Debug, Clone)]
pub(super) struct KernelFacts {
    pub(super) name: String,
    pub(super) header_range: TextRange,
    pub(super) has_time_loop: bool,
    /// Persistent unless a Python time loop relaunches it (see `FileModel::kernel_summaries`).
    pub(super) persistent_shape: bool,
    pub(super) grid_stride: bool,
    /// What the host rules read of this kernel (`model::kernel_host_view`).
    pub(super) host_view: Arc<KernelHostView>,
    /// Its kernel rules' findings read the widths the file's host code names
    /// (`smem::reads_host_widths`).
    pub(super) reads_widths: bool,
}

/// A statement as [`facts`] reads it: its facts and its foreign diagnostics.
pub(super) type Fresh = (UnitFacts, Vec<Diagnostic>);

impl UnitFacts {
    /// [`UnitFacts::reads`] of the statement at `range` in `snapshot` (whose
    /// facts these are: the same text wherever they are shared).
    pub(super) fn reads(&self, snapshot: &Snapshot, range: TextRange) -> &[String] {
        self.reads.get_or_init(|| {
            let node = snapshot.tree.first_top_for_byte(range.start);
            node.filter(|n| n.byte_range() == (range.start..range.end))
                .map(|n| crate::model::module_reads(n, &snapshot.text))
                .unwrap_or_default()
        })
    }
}

impl Snapshot {
    /// The file's diagnostics (suppressions applied, in order), kernels, classes and reference.
    pub fn result(&self, index: &LineIndex) -> CheckResult {
        let mut suppressions = HashMap::default();
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

/// Kernel name -> launches-per-forward estimate, from the statements' own
/// (`model::launch_estimates` over the whole file: the first time loop, in
/// the order the model finds them, that launches the kernel).
pub(super) fn merged_estimates(units: &[Unit]) -> HashMap<String, String> {
    let mut all: Vec<(Option<isize>, &String, &String)> = units
        .iter()
        .flat_map(|u| {
            u.facts.links().estimates.iter().map(move |(start, k, e)| (start.map(|s| s as isize + u.delta), k, e))
        })
        .collect();
    all.sort_by_key(|(start, _, _)| *start);
    let mut out = HashMap::default();
    for (_, k, e) in all {
        out.entry(k.clone()).or_insert_with(|| e.clone());
    }
    out
}

/// Kernel name -> launch sites, from the statements' own.
pub(super) fn merged_launch_counts(units: &[Unit]) -> HashMap<String, usize> {
    launch_sites(units.iter().map(|u| &*u.facts)).into_iter().map(|(k, n)| (k.to_string(), n)).collect()
}

/// Kernel name -> launch sites in the statements `facts`.
pub(super) fn launch_sites<'f>(facts: impl IntoIterator<Item = &'f UnitFacts>) -> HashMap<&'f str, usize> {
    let mut out = HashMap::default();
    for f in facts {
        for (k, n) in &f.links().launch_sites {
            *out.entry(k.as_str()).or_insert(0) += n;
        }
    }
    out
}

/// Kernel name -> launch sites, for the kernel summaries.
pub(super) fn launch_counts(model: &FileModel) -> HashMap<String, usize> {
    let mut counts = HashMap::default();
    for l in &model.launches {
        *counts.entry(l.kernel.clone()).or_insert(0) += 1;
    }
    counts
}
