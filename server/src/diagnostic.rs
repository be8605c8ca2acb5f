//! What the rules produce: diagnostics that carry their own fix as data.
//!
//! As in ruff, a fix is a list of edits plus an applicability; the LSP ships
//! it inside `Diagnostic.data` so that a code-action request does no analysis.

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::text::TextRange;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
    Hint,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
            Severity::Hint => "hint",
        }
    }
}

/// Whether a fix may be applied without a human looking at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Applicability {
    /// Applied by `check --fix` and "fix all".
    Safe,
    /// Applied only with `--unsafe-fixes`, offered as a quick fix to review.
    NeedsReview,
    /// Shown, never applied automatically.
    DisplayOnly,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Hash)]
pub struct Edit {
    pub range: TextRange,
    pub new_text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Hash)]
pub struct Fix {
    pub title: Arc<str>,
    pub applicability: Applicability,
    pub edits: Vec<Edit>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Hash)]
pub struct Related {
    pub range: TextRange,
    pub message: Arc<str>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Hash)]
pub struct Diagnostic {
    /// `KL001`..`KL010`, or `KL9xx` for results that come from running the kernel.
    /// Borrowed from the rule table (no allocation per diagnostic: an open
    /// file holds hundreds).
    pub code: Cow<'static, str>,
    /// The rule's kebab-case name.
    pub name: Cow<'static, str>,
    pub severity: Severity,
    pub range: TextRange,
    pub message: Arc<str>,
    pub related: Vec<Related>,
    pub fix: Option<Fix>,
}

/// Applies non-overlapping edits to `text`. Overlapping or out-of-bounds edits
/// are rejected rather than guessed at: an edit we cannot place exactly is not applied.
pub fn apply_edits(text: &str, edits: &[Edit]) -> Result<String, String> {
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.range.start, e.range.end));
    let mut out = String::with_capacity(text.len());
    let mut cursor = 0usize;
    for e in sorted {
        if e.range.start < cursor || e.range.end > text.len() {
            return Err(format!("edit {:?} overlaps another or lies outside the text", e.range));
        }
        if !text.is_char_boundary(e.range.start) || !text.is_char_boundary(e.range.end) {
            return Err(format!("edit {:?} splits a character", e.range));
        }
        out.push_str(&text[cursor..e.range.start]);
        out.push_str(&e.new_text);
        cursor = e.range.end;
    }
    out.push_str(&text[cursor..]);
    Ok(out)
}
