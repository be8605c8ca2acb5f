//! Code lens on each kernel (persistent or not, launches per forward) and on
//! `ModelNew` (run the benchmark, or its last result); inlay hints with each
//! compiled kernel's registers, spills and shared memory.

use serde_json::Value;
use tower_lsp_server::ls_types::{CodeLens, Command, InlayHint, InlayHintKind, InlayHintLabel, Uri};

use super::bench_view;
use super::convert::Encoding;
use super::document::Document;
use super::state::BenchState;

fn lens(
    doc: &Document,
    range: crate::text::TextRange,
    title: String,
    command: &str,
    args: Vec<Value>,
    encoding: Encoding,
) -> CodeLens {
    CodeLens {
        range: doc.range(range, encoding),
        command: Some(Command { title, command: command.to_string(), arguments: Some(args) }),
        data: None,
    }
}

pub(crate) fn code_lenses(uri: &Uri, doc: &Document, bench: Option<&BenchState>, encoding: Encoding) -> Vec<CodeLens> {
    let mut out = Vec::new();
    for k in &doc.result.kernels {
        let sites = match k.launch_sites {
            0 => "not launched in this file".to_string(),
            1 => "1 launch site".to_string(),
            n => format!("{n} launch sites"),
        };
        let (title, command, args) = if k.persistent {
            (format!("persistent kernel · {sites}"), "", Vec::new())
        } else if let Some(per_forward) = &k.launches_per_forward {
            (format!("not persistent · {per_forward}"), "kernel-lsp.explain", vec![Value::from("KL001")])
        } else if k.has_time_loop {
            (format!("time loop inside · {sites}"), "", Vec::new())
        } else {
            (format!("kernel · {sites}"), "", Vec::new())
        };
        out.push(lens(doc, k.range, title, command, args, encoding));
    }
    let uri_arg = vec![Value::from(uri.as_str())];
    for class in doc.result.classes.iter().filter(|c| c.name == "ModelNew") {
        let title = match bench {
            Some(b) if b.running => "Benchmarking… (run again to restart)".to_string(),
            Some(BenchState { result: Some(r), version, .. }) => {
                let stale = if *version != doc.version { " (before your last edits)" } else { "" };
                format!("{}{stale} · ↻", bench_view::lens_title(r))
            }
            _ => "▶ Benchmark vs reference".to_string(),
        };
        out.push(lens(doc, class.range, title, "kernel-lsp.benchmark", uri_arg.clone(), encoding));
    }
    out
}

pub(crate) fn inlay_hints(doc: &Document, bench: Option<&BenchState>, encoding: Encoding) -> Vec<InlayHint> {
    let Some(result) = bench.and_then(|b| b.result.as_ref()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for k in &doc.result.kernels {
        let Some(stats) = result.kernels.iter().find(|s| s.name == k.name) else {
            continue;
        };
        let Some(label) = bench_view::kernel_hint(stats) else {
            continue;
        };
        out.push(hint_at_line_end(doc, k.range.end, label, encoding));
    }
    out
}

/// An inlay hint showing `label` at the end of the line that holds `offset`
/// (before trailing blanks): the benchmark's per-kernel figures, the compiler's resources.
pub(crate) fn hint_at_line_end(doc: &Document, offset: usize, label: String, encoding: Encoding) -> InlayHint {
    let line = doc.line_index().line_of(offset);
    let end = doc.line_index().line_start(line) + doc.line_text(line).trim_end().len();
    InlayHint {
        position: doc.range(crate::text::TextRange::new(end, end), encoding).end,
        label: InlayHintLabel::String(label),
        kind: None::<InlayHintKind>,
        text_edits: None,
        tooltip: None,
        padding_left: Some(true),
        padding_right: None,
        data: None,
    }
}
