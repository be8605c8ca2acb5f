//! The rule registry: one file per rule, each with its doc text (ruff's four
//! headings), code, kebab-case name and severity. `run` applies the enabled
//! rules to a file model and drops suppressed diagnostics.

use crate::analysis::FileModel;
use crate::config::Settings;
use crate::diagnostic::{Diagnostic, Severity};

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

pub static RULES: &[Rule] = &[];

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
    out.sort_by(|a, b| (a.range.start, &a.code).cmp(&(b.range.start, &b.code)));
    out.dedup();
    out
}
