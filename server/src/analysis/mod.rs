//! tree-sitter-python -> a model of a Triton kernel file, and `check`, which
//! runs the rules over it.
//!
//! May depend on `text`, `config`, `diagnostic`; never on `lsp`, `bench`, `llm`.

use serde::Serialize;
use tree_sitter::{Parser, Tree};

use crate::config::Settings;
use crate::diagnostic::Diagnostic;
use crate::text::TextRange;

/// `node.child_by_field_name("name")` without looking the name up on every
/// call: the field id is resolved once per call site.
macro_rules! field {
    ($node:expr, $name:literal) => {{
        static ID: std::sync::OnceLock<Option<u16>> = std::sync::OnceLock::new();
        ID.get_or_init(|| $crate::analysis::field_id($name)).and_then(|id| $node.child_by_field_id(id))
    }};
}
pub(crate) use field;

pub(crate) fn field_id(name: &str) -> Option<u16> {
    let language: tree_sitter::Language = tree_sitter_python::LANGUAGE.into();
    language.field_id_for_name(name).map(u16::from)
}

pub mod incremental;
pub mod model;
pub mod syntax;
pub mod triton_names;

pub use model::FileModel;

/// Parses Python source; pass the previous (already `edit`ed) tree to reparse incrementally.
pub fn parse(text: &str, old: Option<&Tree>) -> Tree {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .expect("the bundled tree-sitter-python grammar matches the linked tree-sitter");
    parser.parse(text, old).expect("parsing without a timeout or cancellation flag always yields a tree")
}

/// A kernel as the editor and pipelines see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelSummary {
    pub name: String,
    /// The `def` line through the end of the kernel's name.
    pub range: TextRange,
    /// The time loop is inside the kernel and no launch of it sits in a Python time loop.
    pub persistent: bool,
    pub has_time_loop: bool,
    pub launch_sites: usize,
    /// e.g. "2 launches per step × seq_len steps × num_layers layers", when KL001 can tell.
    pub launches_per_forward: Option<String>,
}

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
