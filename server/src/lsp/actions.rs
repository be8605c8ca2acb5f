//! Code actions: a diagnostic's own fix (looked up in the document's
//! analysis, which must describe the current text), "Explain KLxxx", the
//! per-line suppression comment, and `source.fixAll.kernel-lsp` (safe fixes only).

use std::collections::HashMap;

use tower_lsp_server::ls_types::{
    self as lsp, CodeAction, CodeActionKind, CodeActionOrCommand, Command, TextEdit, Uri, WorkspaceEdit,
};

use crate::diagnostic::{Applicability, Diagnostic, Edit};
use crate::llm::Action;
use crate::text::TextRange;

use super::convert::{self, Encoding, FixData};
use super::document::Document;

pub const FIX_ALL_KIND: &str = "source.fixAll.kernel-lsp";
pub const EXPLAIN_KIND: &str = "quickfix.kernel-lsp.explain";
pub const SUPPRESS_KIND: &str = "quickfix.kernel-lsp.suppress";

pub fn edit(uri: &Uri, edits: Vec<TextEdit>) -> WorkspaceEdit {
    WorkspaceEdit { changes: Some(HashMap::from([(uri.clone(), edits)])), ..Default::default() }
}

/// Whether the client asked for actions of `kind` (no `only` means all).
fn wanted(only: Option<&[CodeActionKind]>, kind: &str) -> bool {
    match only {
        None => true,
        Some(kinds) => kinds.iter().any(|k| kind == k.as_str() || kind.starts_with(&format!("{}.", k.as_str()))),
    }
}

/// The actions for `params`; `bench` holds the diagnostics of the last
/// benchmark of `doc` (dropped at its next change: they describe its text).
pub(crate) fn code_actions(
    uri: &Uri,
    doc: &Document,
    bench: &[Diagnostic],
    params: &lsp::CodeActionParams,
    encoding: Encoding,
    resolve: bool,
) -> Vec<CodeActionOrCommand> {
    let only = params.context.only.as_deref();
    let mut out = Vec::new();
    let mut explained = Vec::new();
    for d in &params.context.diagnostics {
        let Some(code) = convert::code_of(d) else {
            continue;
        };
        if wanted(only, "quickfix") {
            if let Some(fix) = stored_fix(doc, bench, d, encoding) {
                out.push(CodeActionOrCommand::CodeAction(CodeAction {
                    title: fix.title.to_string(),
                    kind: Some(CodeActionKind::QUICKFIX),
                    diagnostics: Some(vec![d.clone()]),
                    edit: Some(edit(uri, fix.edits.clone())),
                    is_preferred: Some(fix.applicability == Applicability::Safe),
                    ..Default::default()
                }));
            }
        }
        // A syntax error is not a rule: no comment hides it and there is no rule doc to show.
        let is_rule = code != crate::model::syntax::CODE;
        if is_rule && wanted(only, SUPPRESS_KIND) {
            if let Some(e) = suppression_edit(doc, d.range.start.line as usize, code, encoding) {
                out.push(CodeActionOrCommand::CodeAction(CodeAction {
                    title: format!("Ignore {code} on this line"),
                    kind: Some(CodeActionKind::from(SUPPRESS_KIND)),
                    diagnostics: Some(vec![d.clone()]),
                    edit: Some(edit(uri, vec![e])),
                    ..Default::default()
                }));
            }
        }
        if code == "KL914" && wanted(only, "quickfix") {
            // The size guard refused a CPU-interpreter run: the two ways on,
            // each a benchmark the user starts by choosing it.
            for (title, options) in [
                ("Benchmark at reduced sizes (CPU interpreter)", serde_json::json!({"reduced": true})),
                ("Benchmark at the task's full size anyway", serde_json::json!({"cpu": true, "full_size": true})),
            ] {
                out.push(CodeActionOrCommand::CodeAction(CodeAction {
                    title: title.to_string(),
                    kind: Some(CodeActionKind::QUICKFIX),
                    diagnostics: Some(vec![d.clone()]),
                    command: Some(Command {
                        title: title.to_string(),
                        command: "kernel-lsp.benchmark".to_string(),
                        arguments: Some(vec![serde_json::Value::String(uri.as_str().to_string()), options]),
                    }),
                    ..Default::default()
                }));
            }
        }
        if let Some((action, title)) = llm_action_for(code) {
            if wanted(only, REWRITE_KIND) {
                let data = serde_json::json!({
                    "uri": uri.as_str(),
                    "action": action.name(),
                    "range": d.range,
                    "version": doc.version,
                });
                out.push(CodeActionOrCommand::CodeAction(CodeAction {
                    title: title.to_string(),
                    kind: Some(CodeActionKind::REFACTOR_REWRITE),
                    diagnostics: Some(vec![d.clone()]),
                    // A client that cannot resolve gets the command right away:
                    // still nothing runs until the action is chosen.
                    command: (!resolve).then(|| rewrite_command(title, &data)),
                    data: Some(data),
                    ..Default::default()
                }));
            }
        }
        if is_rule && wanted(only, EXPLAIN_KIND) && !explained.contains(&code) {
            explained.push(code);
            out.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: format!("Explain {code}"),
                kind: Some(CodeActionKind::from(EXPLAIN_KIND)),
                command: Some(Command {
                    title: format!("Explain {code}"),
                    command: "kernel-lsp.explain".to_string(),
                    arguments: Some(vec![serde_json::Value::String(code.to_string())]),
                }),
                ..Default::default()
            }));
        }
    }
    // Source actions are offered only when asked for, as editors run them on save.
    if only.is_some() && wanted(only, FIX_ALL_KIND) {
        let edits = fix_all(doc, encoding);
        if !edits.is_empty() {
            out.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: "Fix all safe kernel-lsp issues".to_string(),
                kind: Some(CodeActionKind::from(FIX_ALL_KIND)),
                edit: Some(edit(uri, edits)),
                ..Default::default()
            }));
        }
    }
    out
}

pub const REWRITE_KIND: &str = "refactor.rewrite";

/// The LLM rewrite offered on a diagnostic, with its code action title.
pub(crate) fn llm_action_for(code: &str) -> Option<(Action, &'static str)> {
    Some(match code {
        "KL001" => (Action::Persistent, "Make persistent with LLM"),
        "KL002" => (Action::Grid2d, "Convert to 2-D grid with LLM"),
        "KL006" | "KL902" => (Action::BlockSize, "Reduce block sizes with LLM"),
        "KL901" | "KL903" | "KL906" => (Action::Repair, "Repair with LLM"),
        _ => return None,
    })
}

/// `kernel-lsp.rewrite [uri, action, range]` for a rewrite action's `data`.
pub(crate) fn rewrite_command(title: &str, data: &serde_json::Value) -> Command {
    Command {
        title: title.to_string(),
        command: "kernel-lsp.rewrite".to_string(),
        arguments: Some(vec![data["uri"].clone(), data["action"].clone(), data["range"].clone()]),
    }
}

/// `codeAction/resolve`: an LLM rewrite action gets its command (the LLM runs
/// only when the client executes it: it takes minutes, far too long to hold
/// the resolve). Other actions come back as they are.
pub fn resolve(mut action: CodeAction) -> CodeAction {
    if action.command.is_none() && action.edit.is_none() {
        if let Some(data) = action.data.as_ref().filter(|d| d.get("action").is_some()) {
            action.command = Some(rewrite_command(&action.title, data));
        }
    }
    action
}

/// The fix of a diagnostic the client sent back: looked up among the
/// document's diagnostics (the analysis's, the last benchmark's) by code and range. None while the analysis lags
/// behind the text (its byte ranges are of an older text), and for a
/// diagnostic of an older text that no current one matches.
fn stored_fix(doc: &Document, bench: &[Diagnostic], d: &lsp::Diagnostic, encoding: Encoding) -> Option<FixData> {
    if !doc.is_analyzed() {
        return None;
    }
    let code = convert::code_of(d)?;
    let mut ours = doc.result.diagnostics.iter().chain(bench);
    let ours = ours.find(|x| x.code == code && doc.range(x.range, encoding) == d.range)?;
    let fix = ours.fix.as_ref()?;
    Some(FixData {
        title: fix.title.to_string(),
        applicability: fix.applicability,
        edits: lsp_edits(doc, &fix.edits, encoding),
    })
}

fn lsp_edits(doc: &Document, edits: &[Edit], encoding: Encoding) -> Vec<TextEdit> {
    edits.iter().map(|e| TextEdit { range: doc.range(e.range, encoding), new_text: e.new_text.clone() }).collect()
}

/// The safe fixes of the document's diagnostics, without overlaps (the first
/// wins); none while the analysis lags behind the text.
pub(crate) fn fix_all(doc: &Document, encoding: Encoding) -> Vec<TextEdit> {
    if !doc.is_analyzed() {
        return Vec::new();
    }
    let mut taken: Vec<TextRange> = Vec::new();
    let mut edits = Vec::new();
    for d in &doc.result.diagnostics {
        let Some(fix) = d.fix.as_ref().filter(|f| f.applicability == Applicability::Safe) else {
            continue;
        };
        let overlaps = fix
            .edits
            .iter()
            .any(|e| taken.iter().any(|t| e.range.start < t.end && t.start < e.range.end || e.range == *t));
        if overlaps {
            continue;
        }
        taken.extend(fix.edits.iter().map(|e| e.range));
        edits.extend(lsp_edits(doc, &fix.edits, encoding));
    }
    edits
}

/// Inserts `# kernel-lsp: ignore[CODE]` at the end of `line`, or adds CODE to
/// the list of an existing one. None when the line already ignores it.
pub(crate) fn suppression_edit(doc: &Document, line: usize, code: &str, encoding: Encoding) -> Option<TextEdit> {
    let text = doc.line_text(line);
    let line_start = doc.line_index().line_start(line);
    const MARK: &str = "# kernel-lsp: ignore";
    if let Some(at) = text.find(MARK) {
        let after = &text[at + MARK.len()..];
        let Some(list) = after.strip_prefix('[') else {
            return None; // a bare `ignore` already covers every code
        };
        let close = list.find(']')?;
        if list[..close].split(',').any(|c| c.trim() == code) {
            return None;
        }
        let insert_at = line_start + at + MARK.len() + 1 + close;
        let range = doc.range(TextRange::new(insert_at, insert_at), encoding);
        return Some(TextEdit { range, new_text: format!(", {code}") });
    }
    let end = line_start + text.trim_end().len();
    let range = doc.range(TextRange::new(end, end), encoding);
    Some(TextEdit { range, new_text: format!("  {MARK}[{code}]") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;
    use std::sync::Arc;

    fn apply(doc: &Document, e: &TextEdit) -> String {
        let start = doc.offset(e.range.start, Encoding::Utf16);
        let end = doc.offset(e.range.end, Encoding::Utf16);
        let mut t = doc.text().to_string();
        t.replace_range(start..end, &e.new_text);
        t
    }

    fn ask(doc: &Document, bench: &[Diagnostic], d: &lsp::Diagnostic) -> Vec<CodeActionOrCommand> {
        let uri: Uri = "file:///t.py".parse().expect("uri");
        let params = lsp::CodeActionParams {
            text_document: lsp::TextDocumentIdentifier { uri: uri.clone() },
            range: d.range,
            context: lsp::CodeActionContext {
                diagnostics: vec![d.clone()],
                only: Some(vec![CodeActionKind::QUICKFIX]),
                trigger_kind: None,
            },
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        };
        code_actions(&uri, doc, bench, &params, Encoding::Utf16, false)
    }

    fn titles(actions: &[CodeActionOrCommand]) -> Vec<String> {
        actions
            .iter()
            .map(|a| match a {
                CodeActionOrCommand::CodeAction(a) => a.title.clone(),
                CodeActionOrCommand::Command(c) => c.title.clone(),
            })
            .collect()
    }

    /// `d` as the document's publication carries it.
    fn publish(uri: &Uri, doc: &Document, d: &Diagnostic) -> lsp::Diagnostic {
        let at =
            convert::Place { uri, text: doc.text(), index: doc.line_index(), encoding: Encoding::Utf16, related: true };
        convert::diagnostic(&at, d)
    }

    /// A published diagnostic carries no fix: the quick fix is read from the
    /// analysis, or from the last benchmark (KL902's shrink), and only while
    /// that analysis describes the current text.
    #[test]
    fn quick_fixes_come_from_the_analysis_of_the_current_text() {
        let text = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, tl.tanh(1.0))\n";
        let mut doc = Document::new(text, 1, Arc::new(Settings::default()));
        let uri: Uri = "file:///t.py".parse().expect("uri");
        let ours = doc.result.diagnostics.iter().find(|d| d.code == "KL005").expect("KL005").clone();
        let published = publish(&uri, &doc, &ours);
        assert_eq!(published.data, None);
        let found = titles(&ask(&doc, &[], &published));
        assert!(found.iter().any(|t| t.starts_with("Replace `tl.tanh(...)`")), "{found:?}");

        // A benchmark's diagnostic with its fix (as KL902 carries the shrink).
        let line = TextRange::new(text.find("def k").expect("def"), text.find("(x_ptr)").expect("params"));
        let bench = Diagnostic {
            code: "KL902".into(),
            name: "out-of-resources".into(),
            severity: crate::diagnostic::Severity::Error,
            range: line,
            message: "out of resource: shared memory".into(),
            related: Vec::new(),
            fix: Some(crate::diagnostic::Fix {
                title: "Shrink to BLOCK=16".into(),
                applicability: Applicability::NeedsReview,
                edits: vec![Edit { range: line, new_text: "def k2".into() }],
            }),
        };
        let published = publish(&uri, &doc, &bench);
        assert!(
            titles(&ask(&doc, std::slice::from_ref(&bench), &published)).contains(&"Shrink to BLOCK=16".to_string())
        );
        assert!(!titles(&ask(&doc, &[], &published)).contains(&"Shrink to BLOCK=16".to_string()));

        // The text changed and its analysis has not landed: no fix from the old one.
        let published = publish(&uri, &doc, &ours);
        let change = lsp::TextDocumentContentChangeEvent {
            range: Some(lsp::Range::new(lsp::Position::new(0, 0), lsp::Position::new(0, 0))),
            range_length: None,
            text: "# a comment\n".into(),
        };
        doc.apply_changes(2, &[change], Encoding::Utf16);
        assert!(!doc.is_analyzed());
        let found = titles(&ask(&doc, &[], &published));
        assert!(!found.iter().any(|t| t.starts_with("Replace")), "{found:?}");
        assert!(fix_all(&doc, Encoding::Utf16).is_empty());
    }

    #[test]
    fn suppression_comment_is_added_or_extended() {
        let doc = Document::new(
            "y = tl.tanh(x)  \nz = 1  # kernel-lsp: ignore[KL004]\nw = 2  # kernel-lsp: ignore\n",
            0,
            Arc::new(Settings::default()),
        );
        let e = suppression_edit(&doc, 0, "KL005", Encoding::Utf16).unwrap();
        assert!(apply(&doc, &e).starts_with("y = tl.tanh(x)  # kernel-lsp: ignore[KL005]  \n"));
        let e = suppression_edit(&doc, 1, "KL005", Encoding::Utf16).unwrap();
        assert!(apply(&doc, &e).contains("z = 1  # kernel-lsp: ignore[KL004, KL005]\n"));
        assert_eq!(suppression_edit(&doc, 1, "KL004", Encoding::Utf16), None);
        assert_eq!(suppression_edit(&doc, 2, "KL001", Encoding::Utf16), None);
    }
}
