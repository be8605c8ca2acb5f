//! The server's mutable state: open documents, the editor's settings, the
//! workspace folders, what the client can do, and benchmark results.
//!
//! It sits behind one `std::sync::Mutex`, taken only for short, synchronous
//! stretches and never across an `.await`. Handlers that change documents
//! (open, change, close, configuration) take it before their first `.await`:
//! tower-lsp-server starts handler futures in the order messages arrive, so
//! document changes apply in order without a queue of our own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;
use tower_lsp_server::ls_types::{self as lsp, ClientCapabilities, Uri};

use crate::bench::BenchResult;
use crate::config::Settings;
use crate::diagnostic::Diagnostic;

use super::convert::{self, Encoding};
use super::document::{Document, Evicted};
use super::framing::Frames;

#[derive(Debug, Clone, Copy, Default)]
pub struct ClientCaps {
    /// The client pulls diagnostics (`textDocument/diagnostic`); we then do not push.
    pub pull_diagnostics: bool,
    pub diagnostic_refresh: bool,
    pub code_lens_refresh: bool,
    pub inlay_hint_refresh: bool,
    pub work_done_progress: bool,
    pub apply_edit: bool,
    pub document_changes: bool,
    pub configuration: bool,
    pub watched_files_dynamic: bool,
    /// The client can fill in a code action's `command` through `codeAction/resolve`.
    pub code_action_resolve: bool,
    /// Completion items may insert snippets (`load(${1:pointer})`).
    pub snippets: bool,
    /// Diagnostics may carry `relatedInformation` (the other places a finding
    /// points at): declared by the client for pushed diagnostics; always for pulled.
    pub related_information: bool,
}

impl ClientCaps {
    pub fn from(c: &ClientCapabilities) -> Self {
        let text = c.text_document.as_ref();
        let ws = c.workspace.as_ref();
        ClientCaps {
            pull_diagnostics: text.and_then(|t| t.diagnostic.as_ref()).is_some(),
            diagnostic_refresh: ws
                .and_then(|w| w.diagnostics.as_ref())
                .and_then(|d| d.refresh_support)
                .unwrap_or(false),
            code_lens_refresh: ws.and_then(|w| w.code_lens.as_ref()).and_then(|d| d.refresh_support).unwrap_or(false),
            inlay_hint_refresh: ws.and_then(|w| w.inlay_hint.as_ref()).and_then(|d| d.refresh_support).unwrap_or(false),
            work_done_progress: c.window.as_ref().and_then(|w| w.work_done_progress).unwrap_or(false),
            apply_edit: ws.and_then(|w| w.apply_edit).unwrap_or(false),
            document_changes: ws
                .and_then(|w| w.workspace_edit.as_ref())
                .and_then(|e| e.document_changes)
                .unwrap_or(false),
            configuration: ws.and_then(|w| w.configuration).unwrap_or(false),
            watched_files_dynamic: ws
                .and_then(|w| w.did_change_watched_files.as_ref())
                .and_then(|d| d.dynamic_registration)
                .unwrap_or(false),
            code_action_resolve: text
                .and_then(|t| t.code_action.as_ref())
                .and_then(|a| a.resolve_support.as_ref())
                .is_some_and(|r| r.properties.iter().any(|p| p == "command")),
            snippets: text
                .and_then(|t| t.completion.as_ref())
                .and_then(|c| c.completion_item.as_ref())
                .and_then(|i| i.snippet_support)
                .unwrap_or(false),
            related_information: text.and_then(|t| t.diagnostic.as_ref()).is_some()
                || text
                    .and_then(|t| t.publish_diagnostics.as_ref())
                    .and_then(|p| p.related_information)
                    .unwrap_or(false),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct BenchState {
    pub running: bool,
    pub result: Option<BenchResult>,
    /// Document version the result was measured on.
    pub version: i32,
    /// The result's located error, dropped when the document changes.
    pub diagnostics: Vec<Diagnostic>,
}

pub struct State {
    pub docs: HashMap<Uri, Document>,
    pub encoding: Encoding,
    /// The editor's settings object, already validated.
    pub editor: Value,
    pub folders: Vec<PathBuf>,
    pub caps: ClientCaps,
    pub bench: HashMap<Uri, BenchState>,
    /// Running benchmarks by progress token, for `window/workDoneProgress/cancel`.
    pub runs: HashMap<String, tokio::task::AbortHandle>,
    /// Cancels for tokens with no run yet (the request and the cancel may be
    /// handled in either order): the run that registers one is aborted at once.
    /// The last few only.
    pub early_cancels: std::collections::VecDeque<String>,
    /// Most recently opened or edited documents first; only these keep a tree.
    pub recent: Vec<Uri>,
    /// Documents with an LLM rewrite running (one at a time per document).
    pub rewrites: std::collections::HashSet<Uri>,
    /// The last compilation of each document (`lsp::compile`).
    pub compile: HashMap<Uri, super::compile::Compiled>,
    /// The compile worker could not run (no Python, no Triton, no sandbox): nothing will
    /// confirm a KL900, so tree-sitter's word stands.
    pub compile_unavailable: bool,
}

/// How many documents keep their tree-sitter tree for incremental reparsing:
/// the one being typed in. A tree and checker snapshot of a 5,000-line file
/// take about 10 MB; with two kept, 20 such files open took 51 MB, with one
/// 42 MB (`lsp_requests`, goal 50 MB). The price: the first keystroke in
/// another document parses and analyses it afresh (a few ms for a few
/// hundred lines, about 50 ms at 5,000), then typing there is incremental.
const TREES_KEPT: usize = 1;

impl Default for State {
    fn default() -> Self {
        State {
            docs: HashMap::new(),
            encoding: Encoding::Utf16,
            editor: Value::Object(Default::default()),
            folders: Vec::new(),
            caps: ClientCaps::default(),
            bench: HashMap::new(),
            runs: HashMap::new(),
            early_cancels: Default::default(),
            recent: Vec::new(),
            rewrites: Default::default(),
            compile: HashMap::new(),
            compile_unavailable: false,
        }
    }
}

/// What the publisher sends: diagnostics for one document version.
pub struct Publish {
    pub uri: Uri,
    pub version: Option<i32>,
    pub diagnostics: Vec<lsp::Diagnostic>,
}

/// Where publications go: written as a frame by the thread that publishes
/// (the analysis thread, as its result lands), or queued for the client.
///
/// Every publication is sent with the state lock held (the document's result
/// read under it), so frames go out in the order the results were installed;
/// the frame is made there too, rather than handed to a thread of its own: one
/// thread less to wake between an analysis and the client (measured with
/// `lsp_latency`, docs/performance.md).
#[derive(Clone)]
pub enum Publisher {
    Frames(Frames),
    /// A server without its own frames (the unit tests' `LspService`).
    Client(mpsc::UnboundedSender<Publish>),
}

impl Publisher {
    /// Pushes the diagnostics of `uri` as they are in `st` (see
    /// [`State::publish`]), unless the client pulls them (then nothing is
    /// pushed, so no diagnostic shows twice); false if nothing was sent.
    /// Frames are written straight from the document's diagnostics
    /// ([`State::write_publication`]).
    pub(crate) fn publish(&self, st: &State, uri: &Uri) -> bool {
        if st.caps.pull_diagnostics {
            return false;
        }
        match self {
            Publisher::Frames(frames) => {
                // About 400 bytes per diagnostic: one allocation for most publications.
                let size = st.docs.get(uri).map_or(0, |d| d.result.diagnostics.len()) * 400 + 256;
                let sent = frames.notify_with("textDocument/publishDiagnostics", size, |out| {
                    st.write_publication(uri, out).is_some()
                });
                tracing::trace!("published {}: {sent}", uri.as_str());
                sent
            }
            Publisher::Client(tx) => st.publish(uri).is_some_and(|p| tx.send(p).is_ok()),
        }
    }

    /// Publishes `p`; an error if the output has stopped.
    pub fn send(&self, p: Publish) -> std::result::Result<(), ()> {
        match self {
            Publisher::Frames(frames) => {
                let params =
                    lsp::PublishDiagnosticsParams { uri: p.uri, diagnostics: p.diagnostics, version: p.version };
                if !frames.notify("textDocument/publishDiagnostics", &params) {
                    return Err(());
                }
                tracing::trace!("published version {:?}", params.version);
                Ok(())
            }
            Publisher::Client(tx) => tx.send(p).map_err(|_| ()),
        }
    }
}

pub(crate) fn file_path(uri: &Uri) -> Option<PathBuf> {
    if uri.scheme().as_str() != "file" {
        return None;
    }
    uri.to_file_path().map(|p| p.into_owned())
}

impl State {
    /// Settings for a document at `uri`, and an error to show about its project file.
    pub fn settings_for(&self, uri: &Uri) -> (Arc<Settings>, Option<String>) {
        let path = file_path(uri);
        let (settings, error) = super::settings::for_file(&self.editor, path.as_deref());
        (Arc::new(settings), error)
    }

    /// Marks `uri` as the document being worked on; takes the trees of the
    /// others, for the caller to free once it has let go of the state lock.
    #[must_use = "the evicted trees are freed where they are dropped"]
    pub(crate) fn touch(&mut self, uri: &Uri) -> Vec<Evicted> {
        self.recent.retain(|u| u != uri);
        self.recent.insert(0, uri.clone());
        let old = self.recent.split_off(TREES_KEPT.min(self.recent.len()));
        let mut evicted = Vec::new();
        for u in &old {
            if let Some(doc) = self.docs.get_mut(u) {
                evicted.push(doc.take_tree());
            }
        }
        evicted
    }

    /// All diagnostics of a document in LSP form: the analysis's (as the
    /// compiler settled them), the last benchmark's and the compiler's.
    pub(crate) fn lsp_diagnostics(&self, uri: &Uri) -> Vec<lsp::Diagnostic> {
        let mut out = Vec::new();
        if let Some(at) = self.place(uri) {
            self.each_diagnostic(uri, |d| out.push(convert::diagnostic(&at, d)));
        }
        out
    }

    /// Where the diagnostics of `uri` are converted for: the document, this client's encoding and capabilities.
    fn place<'s>(&'s self, uri: &'s Uri) -> Option<convert::Place<'s>> {
        let doc = self.docs.get(uri)?;
        Some(convert::Place {
            uri,
            text: doc.text(),
            index: doc.line_index(),
            encoding: self.encoding,
            related: self.caps.related_information,
        })
    }

    /// Calls `f` with each diagnostic [`Self::lsp_diagnostics`] converts, in its order.
    fn each_diagnostic(&self, uri: &Uri, mut f: impl FnMut(&Diagnostic)) {
        let Some(doc) = self.docs.get(uri) else { return };
        let bench = self.bench.get(uri).map(|b| b.diagnostics.as_slice()).unwrap_or(&[]);
        let unconfirmed = super::compile::kl900_unconfirmed(self, uri);
        for d in doc.result.diagnostics.iter().filter_map(|d| super::compile::settle(self, uri, d)) {
            match d.code == crate::model::syntax::CODE && unconfirmed {
                true => f(&super::compile::tentative(&d)),
                false => f(&d),
            }
        }
        for d in bench.iter().chain(super::compile::diagnostics(self, uri)) {
            f(d)
        }
    }

    /// Writes to `out` the JSON of the `textDocument/publishDiagnostics`
    /// parameters [`Self::publish`] gives (the same bytes `serde_json` writes
    /// for them), built straight from the document's diagnostics; returns
    /// the version, or `None` (nothing written) when [`Self::publish`] has
    /// nothing to publish.
    pub(crate) fn write_publication(&self, uri: &Uri, out: &mut Vec<u8>) -> Option<i32> {
        let doc = self.docs.get(uri).filter(|d| d.is_analyzed())?;
        let at = self.place(uri)?;
        out.extend_from_slice(br#"{"uri":"#);
        serde_json::to_writer(&mut *out, uri).ok()?;
        out.extend_from_slice(br#","diagnostics":["#);
        let mut ok = true;
        let mut first = true;
        self.each_diagnostic(uri, |d| {
            if !std::mem::take(&mut first) {
                out.push(b',');
            }
            ok &= convert::write_diagnostic(out, &at, d).is_ok();
        });
        ok.then_some(())?;
        out.extend_from_slice(format!(r#"],"version":{}}}"#, doc.version).as_bytes());
        Some(doc.version)
    }

    /// The publication of a document's diagnostics; none while its analysis
    /// lags behind its text (the analysis publishes when it lands): the
    /// analysis of an older text at its byte ranges in the newer one would go
    /// out under the newer version.
    pub(crate) fn publish(&self, uri: &Uri) -> Option<Publish> {
        let doc = self.docs.get(uri).filter(|d| d.is_analyzed())?;
        Some(Publish { uri: uri.clone(), version: Some(doc.version), diagnostics: self.lsp_diagnostics(uri) })
    }

    /// The workspace folder that holds `path` (the deepest), else the file's directory.
    pub(crate) fn root_for(&self, path: &Path) -> Option<PathBuf> {
        self.folders
            .iter()
            .filter(|f| path.starts_with(f))
            .max_by_key(|f| f.components().count())
            .cloned()
            .or_else(|| path.parent().map(Path::to_path_buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;
    use crate::lsp::document::Document;
    use std::sync::Arc;
    use tower_lsp_server::ls_types::{Position, Range, TextDocumentContentChangeEvent};

    /// A document whose analysis is still running is not published from the
    /// analysis of its older text; once the analysis lands, it is.
    #[test]
    fn a_document_is_published_only_from_the_analysis_of_its_text() {
        let text = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, tl.tanh(1.0))\n";
        let uri: Uri = "file:///t.py".parse().expect("uri");
        let mut st = State::default();
        st.docs.insert(uri.clone(), Document::new(text, 1, Arc::new(Settings::default())));
        let first = st.publish(&uri).expect("published");
        assert_eq!((first.version, first.diagnostics.len()), (Some(1), 1));
        let doc = st.docs.get_mut(&uri).expect("doc");
        let change = TextDocumentContentChangeEvent {
            range: Some(Range::new(Position::new(0, 0), Position::new(0, 0))),
            range_length: None,
            text: "# moved\n".into(),
        };
        doc.apply_changes(2, &[change], st.encoding);
        let job = st.docs.get(&uri).expect("doc").analysis_job();
        assert!(st.publish(&uri).is_none(), "not from the analysis of version 1");
        let analysis = job.run();
        assert!(st.docs.get_mut(&uri).expect("doc").install(2, analysis));
        let second = st.publish(&uri).expect("published");
        assert_eq!(second.version, Some(2));
        assert_eq!(second.diagnostics[0].range.start.line, first.diagnostics[0].range.start.line + 1);
    }

    /// The publication's JSON written straight from the diagnostics is what
    /// `serde_json` writes for the LSP parameters, byte for byte: with text
    /// outside ASCII before a diagnostic (UTF-16 and UTF-8 columns), messages
    /// that need escaping, related information shown or not.
    #[test]
    fn the_publication_is_written_as_serde_writes_it() {
        let text = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr):  # «ü» \u{1F600}\n    \
                    tl.store(x_ptr, tl.tanh(1.0))  # \u{1F600}\n    tl.store(x_ptr + 1, tl.tanh(2.0))\n";
        let uri: Uri = "file:///t%20dir/%C3%A9.py".parse().expect("uri");
        let odd = |at: usize, message: &str, related: Vec<crate::diagnostic::Related>| Diagnostic {
            code: "KL902".into(),
            name: "odd \"name\"".into(),
            severity: crate::diagnostic::Severity::Info,
            range: crate::text::TextRange::new(at, at + 4),
            message: message.into(),
            related,
            fix: None,
        };
        let emoji = text.find('\u{1F600}').expect("emoji");
        let related = vec![crate::diagnostic::Related {
            range: crate::text::TextRange::new(emoji + 4, emoji + 6),
            message: "see \\ here".into(),
        }];
        for (encoding, shown) in [(Encoding::Utf16, false), (Encoding::Utf16, true), (Encoding::Utf8, true)] {
            let mut st = State { encoding, ..State::default() };
            st.caps.related_information = shown;
            st.docs.insert(uri.clone(), Document::new(text, 7, Arc::new(Settings::default())));
            let bench = BenchState {
                diagnostics: vec![
                    odd(emoji + 4, "quote \" backslash \\ newline \n tab \t control \u{1} \u{7f} «ü»", Vec::new()),
                    odd(emoji + 5, "with related", related.clone()),
                    odd(0, "", Vec::new()),
                ],
                ..Default::default()
            };
            st.bench.insert(uri.clone(), bench);
            let p = st.publish(&uri).expect("published");
            assert_eq!(p.diagnostics.len(), 5, "two KL005 and three of the benchmark's");
            let params = lsp::PublishDiagnosticsParams { uri: p.uri, diagnostics: p.diagnostics, version: p.version };
            let want = serde_json::to_vec(&params).expect("serialized");
            let mut got = Vec::new();
            assert_eq!(st.write_publication(&uri, &mut got), Some(7));
            assert_eq!(String::from_utf8(got).expect("utf-8"), String::from_utf8(want).expect("utf-8"));
        }
        // Nothing to publish while the analysis lags behind the text: nothing written.
        let mut st = State::default();
        st.docs.insert(uri.clone(), Document::new(text, 1, Arc::new(Settings::default())));
        let change = TextDocumentContentChangeEvent { range: None, range_length: None, text: "x = 1\n".into() };
        st.docs.get_mut(&uri).expect("doc").apply_changes(2, &[change], st.encoding);
        let mut out = Vec::new();
        assert_eq!((st.write_publication(&uri, &mut out), out.len()), (None, 0));
    }
}
