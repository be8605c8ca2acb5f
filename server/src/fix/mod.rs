//! The deterministic rewrites that need more than a local edit, built on the
//! file model and returned as `Fix` data (rules attach them to diagnostics).
//! Simple replacements live beside their rule (KL004, KL005, KL006).
//! Reads the model; never the rules (they call in here, not the other way
//! round), the checker, `lsp`, `bench` or `llm` (`server/tests/layers.rs`).

pub mod grid2d;
pub mod oor;
pub mod pad_mask;
pub mod shrink;
