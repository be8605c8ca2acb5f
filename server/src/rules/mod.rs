//! The rule registry: one file per rule, each with its doc text (ruff's
//! headings: what it does, why it is bad, example, use instead), code,
//! kebab-case name, severity, reach (what it reports on, which decides when
//! the checker runs it) and, for a rule whose findings each depend on one
//! node, its per-node answer. `run_reach` applies the enabled rules of one
//! reach to a file model; the checker (`crate::checker`) decides which reach
//! runs when, applies suppressions and orders the result, and knows rules
//! only through [`RULES`]. Adding a rule is its file, its fixture
//! (`tests/fixtures/rules/`) and one line in [`RULES`]; docs/rules.md's
//! tables and `check --help` are generated from the registry.
//!
//! A rule is called with a [`Scope`] (the model, the settings, the kernels it
//! reports on, where its questions record host stubs read, a known task):
//! what it may read is in its signature. Rules read the model's facts (what
//! several rules, the checker or the rewrite gate ask lives in `model`, e.g.
//! `model::candidate`, `model::task`, `model::untrusted`, never in a rule)
//! and build their fixes with `fix`; they never parse, never run user
//! code, and never reach the checker that runs them (`server/tests/layers.rs`).

use tree_sitter::Node;

use crate::config::Settings;
use crate::diagnostic::{Diagnostic, Fix, Related, Severity};
use crate::model::candidate::Imports;
use crate::model::{FileModel, Kernel, StubReads};
use crate::text::TextRange;

pub mod kl001;
pub mod kl002;
pub mod kl003;
pub mod kl004;
pub mod kl005;
pub mod kl006;
pub mod kl007;
pub mod kl008;
pub mod kl009;
pub mod kl010;
pub mod kl011;
pub mod kl101;
pub mod kl102;
pub mod kl103;
pub mod kl104;
pub mod kl105;
pub mod kl106;
pub mod kl107;
pub mod kl108;
pub mod kl109;

/// What one run of a rule is given: the model, the settings, the kernels
/// the kernel rules report on (all of the model's, or those the checker
/// files under one statement), where the model's questions record the host
/// stubs they read, and a task known from elsewhere. What a rule may read
/// arrives here, in its signature, not as state kept in the model.
pub struct Scope<'s, 'a> {
    pub model: &'s FileModel<'a>,
    pub settings: &'s Settings,
    /// The kernels a [`Reach::Kernel`] rule reports on.
    pub kernels: &'s [Kernel<'a>],
    /// Where the model's questions record the host stubs they read beyond
    /// what a stub keeps (`model::StubReads`): the questions that may take it.
    pub stubs: &'s StubReads,
    /// The task's main ops (`model::task`) where the caller read them from the
    /// reference file (the rewrite gate); otherwise KL102 reads the file's own `Model`.
    pub task: Option<&'s [String]>,
}

impl<'s, 'a> Scope<'s, 'a> {
    /// Every kernel of `model` reported on.
    pub fn whole(model: &'s FileModel<'a>, settings: &'s Settings, stubs: &'s StubReads) -> Self {
        Scope { model, settings, kernels: &model.kernels, stubs, task: None }
    }
}

/// Static description of a rule.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub code: &'static str,
    pub name: &'static str,
    pub severity: Severity,
    /// One line for `kernel-lsp rules`.
    pub summary: &'static str,
    /// The full documentation (markdown), printed by `kernel-lsp rules CODE` and on hover.
    pub doc: &'static str,
    /// What the rule reports on, which decides when the checker runs it.
    pub reach: Reach,
    /// A KernelBench hygiene rule (KL101-KL109): only a candidate (a
    /// `ModelNew` file) gets it, and it reads the whole candidate.
    pub hygiene: bool,
    /// Its findings in `scope`, unsuppressed and unsorted.
    pub check: fn(&Scope, &mut Vec<Diagnostic>),
    /// For a rule each of whose findings depends on one node and the file's
    /// imports alone (KL107, KL108): its findings among `nodes` (the nodes
    /// of one statement: `NodeIndex::statement_nodes`, so a per-node rule
    /// reads only assignments, calls, attributes, `__builtins__` and the
    /// module names of imports), unsuppressed, whether the rule is enabled or
    /// not. The checker asks it of a changed statement instead of the whole file.
    pub per_node: Option<fn(&str, &Imports, &[Node]) -> Vec<Diagnostic>>,
}

impl Rule {
    pub fn diagnostic(&self, range: TextRange, message: String) -> Diagnostic {
        Diagnostic {
            code: self.code.into(),
            name: self.name.into(),
            severity: self.severity,
            range,
            message: message.into(),
            related: Vec::new(),
            fix: None,
        }
    }
}

impl Diagnostic {
    pub(crate) fn with_related(mut self, range: TextRange, message: impl Into<String>) -> Self {
        let message: String = message.into();
        self.related.push(Related { range, message: message.into() });
        self
    }
    pub(crate) fn with_fix(mut self, fix: Option<Fix>) -> Self {
        self.fix = fix;
        self
    }
}

pub static RULES: &[Rule] = &[
    kl001::RULE,
    kl002::RULE,
    kl003::RULE,
    kl004::RULE,
    kl005::RULE,
    kl006::RULE,
    kl007::RULE,
    kl008::RULE,
    kl009::RULE,
    kl010::RULE,
    kl011::RULE,
    kl101::RULE,
    kl102::RULE,
    kl103::RULE,
    kl104::RULE,
    kl105::RULE,
    kl106::RULE,
    kl107::RULE,
    kl108::RULE,
    kl109::RULE,
];

pub fn by_code(code: &str) -> Option<&'static Rule> {
    let code = code.trim();
    RULES.iter().find(|r| r.code.eq_ignore_ascii_case(code) || r.name == code)
}

/// The first and last codes of the registry's rules, joined by `dash`: the
/// mistakes (KL0xx), then the hygiene rules (`"KL001-KL010"`, `"KL101-KL109"`).
pub fn code_ranges(dash: &str) -> [String; 2] {
    [false, true].map(|hygiene| {
        let codes: Vec<&str> = RULES.iter().filter(|r| r.hygiene == hygiene).map(|r| r.code).collect();
        format!("{}{dash}{}", codes.first().unwrap_or(&""), codes.last().unwrap_or(&""))
    })
}

/// The Markdown table of the mistakes (KL0xx) or of the hygiene rules, one
/// row per rule from its file (code, name, severity, summary): the tables of
/// docs/rules.md, kept equal by `tests/tests/docs_defaults.rs`.
pub fn markdown_table(hygiene: bool) -> String {
    let mut out = String::from("| code | name | severity | what |\n|---|---|---|---|\n");
    for r in RULES.iter().filter(|r| r.hygiene == hygiene) {
        out.push_str(&format!("| {} | {} | {} | {} |\n", r.code, r.name, r.severity.as_str(), r.summary));
    }
    out
}

/// What a rule reports on, for the incremental analysis (`checker`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Iterates [`Scope::kernels`]; each diagnostic depends on its kernel,
    /// the helpers it calls, its launch sites and module-level constants.
    Kernel,
    /// Iterates host functions: depends on all host code, the kernel names and
    /// what `model::KernelHostView` holds of each kernel (KL001's state flow).
    /// The hygiene rules ([`Rule::hygiene`]) also report on kernel names (KL103)
    /// and read inside kernels (KL107, KL108), which the checker checks.
    Host,
    /// Iterates `tl.*` attributes; reports on the attribute itself.
    TlAttr,
}

/// Whether the rule that reported `code` is a hygiene rule ([`Rule::hygiene`]).
pub(crate) fn is_hygiene(code: &str) -> bool {
    by_code(code).is_some_and(|r| r.hygiene)
}

/// Runs the enabled rules of one reach, unsuppressed and unsorted.
pub(crate) fn run_reach(scope: &Scope, which: Reach, out: &mut Vec<Diagnostic>) {
    for rule in RULES.iter().filter(|r| r.reach == which && scope.settings.enabled(r.code)) {
        (rule.check)(scope, out);
    }
}

/// Sorts diagnostics by position (then code, end, and the rest, so that the
/// order never depends on the order the rules ran in) and drops duplicates.
pub(crate) fn finish(out: &mut Vec<Diagnostic>) {
    out.sort_by(|a, b| {
        (a.range.start, &a.code, a.range.end).cmp(&(b.range.start, &b.code, b.range.end)).then_with(|| a.cmp(b))
    });
    out.dedup();
}
