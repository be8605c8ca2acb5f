//! The rule registry: one file per rule, each with its doc text (ruff's
//! headings: what it does, why it is bad, example, use instead), code,
//! kebab-case name and severity. `run` applies the enabled rules to a file
//! model and drops suppressed diagnostics.
//!
//! Rules read the model; they never parse, and they never run user code.

use crate::analysis::FileModel;
use crate::config::Settings;
use crate::diagnostic::{Diagnostic, Fix, Related, Severity};
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
    pub check: fn(&FileModel, &Settings, &mut Vec<Diagnostic>),
}

impl Rule {
    pub fn diagnostic(&self, range: TextRange, message: String) -> Diagnostic {
        Diagnostic {
            code: self.code.to_string(),
            name: self.name.to_string(),
            severity: self.severity,
            range,
            message,
            related: Vec::new(),
            fix: None,
        }
    }
}

impl Diagnostic {
    pub fn with_related(mut self, range: TextRange, message: impl Into<String>) -> Self {
        self.related.push(Related { range, message: message.into() });
        self
    }
    pub fn with_fix(mut self, fix: Option<Fix>) -> Self {
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
];

pub fn by_code(code: &str) -> Option<&'static Rule> {
    let code = code.trim();
    RULES.iter().find(|r| r.code.eq_ignore_ascii_case(code) || r.name == code)
}

/// Runs every enabled rule; diagnostics come back sorted by position.
pub fn run(model: &FileModel, settings: &Settings) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for rule in RULES.iter().filter(|r| settings.enabled(r.code)) {
        (rule.check)(model, settings, &mut out);
    }
    out.retain(|d| !model.is_suppressed(d.range.start, &d.code));
    out.sort_by(|a, b| (a.range.start, &a.code, a.range.end).cmp(&(b.range.start, &b.code, b.range.end)));
    out.dedup();
    out
}
