//! Between the analysis's byte ranges and LSP positions in the negotiated
//! encoding, and from our diagnostics to LSP diagnostics.
//!
//! A published diagnostic carries no `data`: a code action reads the fix from
//! the document's own analysis once that describes the current text
//! (`actions`). Carrying every fix's edits in every publication made it a
//! quarter larger, and turning them into `serde_json::Value` trees cost more
//! than the rest of the conversion (measured with `lsp_latency`, see
//! docs/performance.md).

use serde::{Deserialize, Serialize};
use tower_lsp_server::ls_types::{
    self as lsp, DiagnosticRelatedInformation, Location, NumberOrString, Position, PositionEncodingKind, Range,
    TextEdit, Uri,
};

use crate::diagnostic::{Applicability, Diagnostic, Severity};
use crate::text::{ColumnUnit, LineIndex, TextRange};

pub const SOURCE: &str = "kernel-lsp";

/// The negotiated position encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

impl Encoding {
    /// UTF-8 when the client offers it, UTF-16 (the protocol's default) otherwise.
    pub(crate) fn negotiate(offered: Option<&[PositionEncodingKind]>) -> Encoding {
        match offered {
            Some(kinds) if kinds.contains(&PositionEncodingKind::UTF8) => Encoding::Utf8,
            _ => Encoding::Utf16,
        }
    }

    pub fn kind(self) -> PositionEncodingKind {
        match self {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
        }
    }

    pub fn unit(self) -> ColumnUnit {
        match self {
            Encoding::Utf8 => ColumnUnit::Utf8,
            Encoding::Utf16 => ColumnUnit::Utf16,
        }
    }

    /// How many columns `ch` takes.
    pub fn width(self, ch: char) -> usize {
        match self {
            Encoding::Utf8 => ch.len_utf8(),
            Encoding::Utf16 => ch.len_utf16(),
        }
    }
}

pub fn position(text: &str, index: &LineIndex, offset: usize, encoding: Encoding) -> Position {
    let (line, col) = index.position(text, offset, encoding.unit());
    Position::new(line as u32, col as u32)
}

pub fn range(text: &str, index: &LineIndex, range: TextRange, encoding: Encoding) -> Range {
    Range::new(position(text, index, range.start, encoding), position(text, index, range.end, encoding))
}

/// A fix in LSP terms, for a code action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixData {
    pub title: String,
    pub applicability: Applicability,
    pub edits: Vec<TextEdit>,
}

pub fn severity(s: Severity) -> lsp::DiagnosticSeverity {
    match s {
        Severity::Error => lsp::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        Severity::Info => lsp::DiagnosticSeverity::INFORMATION,
        Severity::Hint => lsp::DiagnosticSeverity::HINT,
    }
}

/// The document a finding is put in LSP terms for, and how: in `encoding`'s
/// columns, with `relatedInformation` only where the client takes it (`related`).
pub struct Place<'a> {
    pub uri: &'a Uri,
    pub text: &'a str,
    pub index: &'a LineIndex,
    pub encoding: Encoding,
    pub related: bool,
}

/// A finding in LSP terms.
pub fn diagnostic(at: &Place, d: &Diagnostic) -> lsp::Diagnostic {
    let related = (at.related && !d.related.is_empty()).then(|| {
        d.related
            .iter()
            .map(|r| DiagnosticRelatedInformation {
                location: Location { uri: at.uri.clone(), range: range(at.text, at.index, r.range, at.encoding) },
                message: r.message.to_string(),
            })
            .collect()
    });
    lsp::Diagnostic {
        range: range(at.text, at.index, d.range, at.encoding),
        severity: Some(severity(d.severity)),
        code: Some(NumberOrString::String(d.code.to_string())),
        code_description: None,
        source: Some(SOURCE.to_string()),
        message: format!("{} [{}]", d.message, d.name),
        related_information: related,
        tags: None,
        data: None,
    }
}

/// Appends to `out` the JSON of [`diagnostic`] (what `serde_json` writes for
/// it, byte for byte) without building it: a publication of a large file
/// turns hundreds of diagnostics into JSON on every keystroke, and each
/// built one cost four allocations and a copy of its message. A diagnostic
/// that shows related information is built and written the usual way.
pub(crate) fn write_diagnostic(out: &mut Vec<u8>, at: &Place, d: &Diagnostic) -> serde_json::Result<()> {
    if at.related && !d.related.is_empty() {
        return serde_json::to_writer(out, &diagnostic(at, d));
    }
    use serde::Serializer as _;
    use std::io::Write as _;
    let Range { start, end } = range(at.text, at.index, d.range, at.encoding);
    write!(
        out,
        r#"{{"range":{{"start":{{"line":{},"character":{}}},"end":{{"line":{},"character":{}}}}},"severity":"#,
        start.line, start.character, end.line, end.character
    )
    .map_err(serde_json::Error::io)?;
    serde_json::to_writer(&mut *out, &severity(d.severity))?;
    out.extend_from_slice(br#","code":"#);
    serde_json::to_writer(&mut *out, &*d.code)?;
    out.extend_from_slice(br#","source":"#);
    serde_json::to_writer(&mut *out, SOURCE)?;
    out.extend_from_slice(br#","message":"#);
    // Escaped as it is formatted: no message string in between.
    serde_json::Serializer::new(&mut *out).collect_str(&format_args!("{} [{}]", d.message, d.name))?;
    out.push(b'}');
    Ok(())
}

pub(crate) fn code_of(d: &lsp::Diagnostic) -> Option<&str> {
    match &d.code {
        Some(NumberOrString::String(s)) if d.source.as_deref() == Some(SOURCE) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_is_chosen_only_when_offered() {
        let both = [PositionEncodingKind::UTF16, PositionEncodingKind::UTF8];
        assert_eq!(Encoding::negotiate(Some(&both)), Encoding::Utf8);
        assert_eq!(Encoding::negotiate(Some(&[PositionEncodingKind::UTF32])), Encoding::Utf16);
        assert_eq!(Encoding::negotiate(None), Encoding::Utf16);
    }
}
