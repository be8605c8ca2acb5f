//! `kernel-lsp.rewrite`: the pieces of an LLM rewrite that do not need the
//! server: reading the command's arguments, progress messages from stage
//! events, the outcome summary, and the confirmed whole-document edit.

use std::collections::HashMap;

use serde_json::{json, Value};
use tower_lsp_server::ls_types::{
    AnnotatedTextEdit, ChangeAnnotation, DocumentChanges, OneOf, OptionalVersionedTextDocumentIdentifier, Range,
    TextDocumentEdit, TextEdit, Uri, WorkspaceEdit,
};

use crate::llm::{Action, RewriteOutcome, StageEvent};
use crate::text::LineIndex;

use super::convert::{self, Encoding};

/// The change annotation every rewrite edit carries.
pub const ANNOTATION: &str = "kernel-lsp.rewrite";

/// Options in the command's fourth argument: what `kernel-lsp rewrite`
/// takes on the command line (`--cpu`, `--set`, `--candidates`, ...).
#[derive(Debug, Default)]
pub struct Options {
    pub cpu: bool,
    pub overrides: Vec<(String, String)>,
    pub candidates: Option<u32>,
    pub repairs: Option<u32>,
    pub bench_timeout: Option<f64>,
}

pub(crate) fn parse_action(v: Option<&Value>) -> Result<Action, String> {
    let known = "persistent, grid-2d, block-size, repair";
    let s = v.and_then(Value::as_str).ok_or_else(|| format!("argument 1 must be the action: {known}"))?;
    serde_json::from_value(Value::String(s.to_string())).map_err(|_| format!("unknown action {s:?}; known: {known}"))
}

pub(crate) fn parse_options(v: Option<&Value>) -> Result<Options, String> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(Options::default());
    };
    let o = v.as_object().ok_or("argument 3 must be an options object")?;
    let count = |k: &str| -> Result<Option<u32>, String> {
        match o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_u64().map(|n| Some(n as u32)).ok_or(format!("option {k:?} must be a whole number")),
        }
    };
    let mut overrides = Vec::new();
    if let Some(set) = o.get("set").filter(|v| !v.is_null()) {
        let set = set.as_object().ok_or("option \"set\" must map module constants to values")?;
        for (k, v) in set {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            overrides.push((k.clone(), v));
        }
    }
    Ok(Options {
        cpu: o.get("cpu").and_then(Value::as_bool).unwrap_or(false),
        overrides,
        candidates: count("candidates")?,
        repairs: count("repairs")?,
        bench_timeout: o.get("bench-timeout").and_then(Value::as_f64),
    })
}

/// "candidate 2: repair 1: bench — compile-error: ..." for one stage event.
pub(crate) fn stage_message(ev: &StageEvent) -> String {
    let r = &ev.record;
    let mut s = match r.candidate {
        Some(c) => format!("candidate {c}: "),
        None => String::new(),
    };
    if let Some(a) = r.attempt.filter(|a| *a > 0) {
        s.push_str(&format!("repair {a}: "));
    }
    s.push_str(match r.stage.as_str() {
        "llm" | "repair-llm" => "LLM",
        "baseline" => "baseline benchmark",
        "bench" => "benchmark",
        "gate" => "static gate",
        other => other,
    });
    if ev.finished {
        let detail = if r.problem.is_empty() || r.problem.starts_with("ok") { &r.score } else { &r.problem };
        if !detail.is_empty() && detail != "-" {
            s.push_str(" — ");
            s.push_str(&detail.chars().take(120).collect::<String>());
        }
    } else {
        s.push('…');
    }
    s
}

/// One line per candidate: "candidate 1: rejected after 2 answers — KL001 ...".
pub(crate) fn candidates_summary(outcome: &RewriteOutcome) -> String {
    outcome
        .candidates
        .iter()
        .map(|c| {
            let mut line = format!(
                "candidate {}: {} after {} answer{}",
                c.index,
                c.status.word(),
                c.attempts,
                if c.attempts == 1 { "" } else { "s" }
            );
            if let Some(p) = c.problem.as_deref().filter(|p| !p.is_empty()) {
                line.push_str(" — ");
                line.push_str(&p.replace('\n', " ").chars().take(200).collect::<String>());
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Turns the document (`old` as the client has it at `version`) into `new`
/// with one edit per changed region (the preview shows the real diff, hunk by
/// hunk), all under one annotation that needs confirmation so the client
/// previews them; `description` says what was verified.
pub(crate) fn confirmed_edit(
    uri: &Uri,
    version: Option<i32>,
    old: &str,
    new: &str,
    encoding: Encoding,
    label: &str,
    description: &str,
) -> WorkspaceEdit {
    let index = LineIndex::new(old);
    let offset = |line: usize| if line < index.line_count() { index.line_start(line) } else { old.len() };
    let edits = crate::llm::diff::hunks(old, new)
        .into_iter()
        .map(|h| {
            let range = Range::new(
                convert::position(old, &index, offset(h.old_lines.start), encoding),
                convert::position(old, &index, offset(h.old_lines.end), encoding),
            );
            OneOf::Right(AnnotatedTextEdit {
                text_edit: TextEdit { range, new_text: h.new_text },
                annotation_id: ANNOTATION.to_string(),
            })
        })
        .collect();
    WorkspaceEdit {
        document_changes: Some(DocumentChanges::Edits(vec![TextDocumentEdit {
            text_document: OptionalVersionedTextDocumentIdentifier { uri: uri.clone(), version },
            edits,
        }])),
        change_annotations: Some(HashMap::from([(
            ANNOTATION.to_string(),
            ChangeAnnotation {
                label: label.to_string(),
                needs_confirmation: Some(true),
                description: Some(description.to_string()).filter(|d| !d.is_empty()),
            },
        )])),
        ..Default::default()
    }
}

/// What the command returns: the editors read `edit`, `title`, `speedup`, `message`.
pub(crate) fn result_value(
    outcome: &RewriteOutcome,
    edit: Option<&WorkspaceEdit>,
    applied: Option<bool>,
    message: &str,
) -> Value {
    json!({
        "title": outcome.title,
        "speedup": outcome.speedup,
        "verified_mode": outcome.verified_mode,
        "winner": outcome.winner,
        "diff": outcome.diff,
        "candidates": candidates_summary(outcome),
        "applied": applied,
        "edit": edit,
        "message": message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::StageRecord;

    fn record(stage: &str, candidate: Option<u32>, attempt: Option<u32>, problem: &str) -> StageRecord {
        StageRecord {
            time: String::new(),
            run: String::new(),
            file: "k.py".into(),
            action: "persistent".into(),
            stage: stage.into(),
            candidate,
            attempt,
            score: "error".into(),
            latency_ms: 0,
            problem: problem.into(),
            tokens: None,
        }
    }

    #[test]
    fn progress_messages_name_the_candidate_the_repair_and_the_problem() {
        let ev = StageEvent { finished: true, record: record("bench", Some(2), Some(1), "compile-error: at 12:4") };
        assert_eq!(stage_message(&ev), "candidate 2: repair 1: benchmark — compile-error: at 12:4");
        let ev = StageEvent { finished: false, record: record("llm", Some(1), Some(0), "") };
        assert_eq!(stage_message(&ev), "candidate 1: LLM…");
    }

    #[test]
    fn actions_and_options_parse() {
        assert_eq!(parse_action(Some(&json!("grid-2d"))), Ok(Action::Grid2d));
        assert!(parse_action(Some(&json!("make-persistent"))).unwrap_err().contains("persistent, grid-2d"));
        let o = parse_options(Some(&json!({"cpu": true, "set": {"seq_len": 4}, "candidates": 1}))).unwrap();
        assert!(o.cpu);
        assert_eq!(o.overrides, vec![("seq_len".to_string(), "4".to_string())]);
        assert_eq!(o.candidates, Some(1));
        assert!(parse_options(Some(&json!({"candidates": "x"}))).is_err());
    }

    #[test]
    fn the_edit_is_one_text_edit_per_hunk_and_needs_confirmation() {
        let uri: Uri = "file:///x/k.py".parse().unwrap();
        let old = "import torch\nx = 1\ny = 2\nz = 3\n";
        let new = "import torch\nimport triton\nx = 1\ny = 20\nz = 3\n";
        let v = serde_json::to_value(confirmed_edit(&uri, Some(1), old, new, Encoding::Utf16, "T", "d")).unwrap();
        let edits = v["documentChanges"][0]["edits"].as_array().unwrap().clone();
        assert_eq!(edits.len(), 2, "{edits:#?}");
        assert_eq!(
            edits[0]["range"],
            json!({"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}})
        );
        assert_eq!(edits[0]["newText"], "import triton\n");
        assert_eq!(
            edits[1]["range"],
            json!({"start": {"line": 2, "character": 0}, "end": {"line": 3, "character": 0}})
        );
        assert_eq!(edits[1]["newText"], "y = 20\n");
        assert!(edits.iter().all(|e| e["annotationId"] == ANNOTATION));
        assert_eq!(v["changeAnnotations"][ANNOTATION]["description"], "d");
    }

    #[test]
    fn an_edit_at_the_end_without_a_newline_reaches_the_end() {
        let uri: Uri = "file:///x/k.py".parse().unwrap();
        let e = confirmed_edit(&uri, Some(3), "a\nbé", "new", Encoding::Utf16, "T", "d");
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["changeAnnotations"][ANNOTATION]["needsConfirmation"], true);
        let edit = &v["documentChanges"][0]["edits"][0];
        assert_eq!(edit["range"]["end"], json!({"line": 1, "character": 2}));
        assert_eq!(edit["annotationId"], ANNOTATION);
        assert_eq!(v["documentChanges"][0]["textDocument"]["version"], 3);
    }
}
