//! Shared helpers for end-to-end tests live in `tests/tests/common`.
