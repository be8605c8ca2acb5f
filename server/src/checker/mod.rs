//! The checker: runs the rules over the model of a file, fully ([`check`])
//! or incrementally per top-level statement ([`analyze`]), adds the syntax
//! errors, applies suppression comments and orders the result.
//!
//! One file per path an analysis can take, and what they share:
//! - `full.rs`: the full check (every statement read; a large file on two threads);
//! - `kernel_edit.rs`: an edit inside kernels only (the changed statements
//!   and what their kernel rules read are re-read; the host rules' findings move);
//! - `host_edit.rs`: an edit of host code (the host rules run again on a model
//!   whose unaffected statements are stubs);
//! - `units.rs`: what one top-level statement contributes (its facts) and how
//!   its host code links to other statements;
//! - `snapshot.rs`: the [`Snapshot`] a document keeps between versions, and
//!   the result it gives; `matching.rs`: which statements an edit left as
//!   they were, and moving cached positions with them;
//! - `run.rs`: running the rules, which it reaches only through the
//!   registry (`rules::RULES`: each rule's reach and, for KL107/KL108, its
//!   per-node answer), never by naming a rule's module (`server/tests/layers.rs`);
//! - `tests.rs`: the random-edit property tests: after every batch of edits,
//!   the incremental result equals a full analysis of the same tree.
//!
//! It sits above `rules` and `model`; only `lsp`, `bench`, `llm` and the CLI
//! depend on it. Nothing here does I/O or knows the protocol.

use std::sync::Arc;

use serde::Serialize;

use crate::config::Settings;
use crate::diagnostic::Diagnostic;
use crate::model::parse_forest;
use crate::model::Forest;
pub use crate::model::KernelSummary;
use crate::rules;
use crate::text::{LineIndex, TextRange};

mod full;
mod host_edit;
mod kernel_edit;
mod matching;
mod run;
mod snapshot;
#[cfg(test)]
pub(crate) mod tests;
mod units;

pub use snapshot::{Path, Snapshot};

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

/// Analyses `text` (parsed as `tree`), incrementally from `previous` where it can.
/// Returns the result and the snapshot to pass for the next version.
pub fn analyze(
    text: &Arc<str>,
    tree: &Forest,
    settings: &Settings,
    index: &LineIndex,
    previous: Option<&Snapshot>,
) -> (CheckResult, Snapshot) {
    let top = matching::top_level(tree);
    let snapshot = match previous {
        Some(p) if p.settings == *settings => matching::matching(text, p, top.clone())
            .and_then(|m| {
                kernel_edit::analyze(text, tree, p, &m).or_else(|why| {
                    tracing::debug!("not a kernel edit: {why}");
                    host_edit::analyze(text, tree, p, &m)
                })
            })
            .unwrap_or_else(|why| {
                tracing::debug!("analysing afresh: {why}");
                full::full(text, tree, settings)
            }),
        _ => full::full(text, tree, settings),
    };
    (with_syntax_errors(snapshot.result(index), text, tree, &top), snapshot)
}

/// The result of a fresh analysis, without a snapshot.
pub fn check(text: &str, tree: &Forest, settings: &Settings) -> CheckResult {
    let top = matching::top_level(tree);
    with_syntax_errors(full::full(&Arc::from(text), tree, settings).result(&LineIndex::new(text)), text, tree, &top)
}

/// Adds KL900 where the file does not parse. Read from the tree, not cached
/// per statement: a tree without errors costs one flag check, and both
/// paths read the same tree, so the incremental result stays equal to the full one.
fn with_syntax_errors(mut result: CheckResult, text: &str, tree: &Forest, top: &[tree_sitter::Node]) -> CheckResult {
    let errors = crate::model::syntax::errors_among(text, tree, top);
    if !errors.is_empty() {
        result.diagnostics.extend(errors);
        rules::finish(&mut result.diagnostics);
    }
    result
}

/// Parses and checks in one step.
pub fn check_text(text: &str, settings: &Settings) -> CheckResult {
    check(text, &parse_forest(text), settings)
}
