//! Text edits and the deterministic rewrites (block sizes, `tl.tanh`,
//! constexpr bounds, 2-D grid). Depends on `analysis`; never on `lsp`.
