//! The language server (tower-lsp-server) — see issue 3.
