//! kernel-lsp: a language server for Triton GPU kernels.
//!
//! Layers, and the direction dependencies may point (see ARCHITECTURE.md):
//! `text`/`diagnostic`/`config` (plain data) <- `analysis` (tree-sitter ->
//! file model) <- `rules` (model -> diagnostics) <- `fix` (edits) <- `lsp`,
//! `bench`, `llm`. Nothing below `lsp` knows about the protocol.

pub mod analysis;
pub mod bench;
pub mod config;
pub mod diagnostic;
pub mod fix;
pub mod llm;
pub mod lsp;
pub mod rules;
pub mod text;

pub use analysis::{check, parse, CheckResult, KernelSummary};
pub use config::Settings;
pub use diagnostic::{Applicability, Diagnostic, Edit, Fix, Related, Severity};
pub use text::{LineIndex, TextRange};
