//! kernel-lsp: a language server for Triton GPU kernels.
//!
//! Layers, and the direction dependencies may point (see ARCHITECTURE.md):
//! `text`/`diagnostic`/`config` (plain data) <- `model` (tree-sitter -> file
//! model: facts) <- `fix` (edits built on the model) <- `rules` (model ->
//! diagnostics, with fixes) <- `checker` (runs the rules, full or
//! incremental) <- `lsp`, `bench`, `llm`. Nothing below `lsp` knows about the
//! protocol; `server/tests/layers.rs` keeps the arrows pointing one way.

pub mod bench;
pub mod checker;
pub mod compile;
pub mod config;
pub mod diagnostic;
pub mod files;
pub mod fix;
pub mod fork;
pub mod llm;
pub mod lsp;
pub mod model;
pub mod rules;
pub mod text;
#[cfg(test)]
mod xorshift;

pub use checker::{check, CheckResult, KernelSummary};
pub use config::Settings;
pub use diagnostic::{Applicability, Diagnostic, Edit, Fix, Related, Severity};
pub use model::{parse, parse_forest};
pub use text::{LineIndex, TextRange};
