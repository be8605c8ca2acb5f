//! The checker: runs the rules over the model of a file, fully ([`check`])
//! or incrementally per top-level statement ([`incremental::analyze`]), adds
//! the syntax errors, applies suppression comments and orders the result.
//!
//! It sits above `rules` and `model`; only `lsp`, `bench`, `llm` and the CLI
//! depend on it.

use serde::Serialize;
use tree_sitter::Tree;

use crate::config::Settings;
use crate::diagnostic::Diagnostic;
use crate::model::parse;
pub use crate::model::KernelSummary;
use crate::text::TextRange;

pub mod incremental;

/// A class of the KernelBench convention (`Model`, `ModelNew`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassSummary {
    pub name: String,
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct CheckResult {
    pub diagnostics: Vec<Diagnostic>,
    pub kernels: Vec<KernelSummary>,
    pub classes: Vec<ClassSummary>,
    /// Path from a `# kernel-lsp: reference = PATH` comment, if any.
    pub reference: Option<String>,
}

/// Full analysis of one file: the model, the enabled rules, suppressions applied.
pub fn check(text: &str, tree: &Tree, settings: &Settings) -> CheckResult {
    incremental::check(text, tree, settings)
}

/// Parses and checks in one step.
pub fn check_text(text: &str, settings: &Settings) -> CheckResult {
    let tree = parse(text, None);
    check(text, &tree, settings)
}
