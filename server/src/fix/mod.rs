//! The deterministic rewrites that need more than a local edit, built on the
//! file model and returned as `Fix` data (rules attach them to diagnostics).
//! Simple replacements live beside their rule (KL004, KL005, KL006).
//! Depends on `analysis`; never on `lsp`, `bench` or `llm`.

pub mod grid2d;
pub mod oor;
pub mod pad_mask;
