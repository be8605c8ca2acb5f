//! The `LanguageServer` implementation.
//!
//! Two kinds of handlers, as in ruff's server: those that change state
//! (`didOpen`, `didChange`, `didClose`, configuration, workspace folders) take
//! the state lock before their first `.await` and so apply in the order the
//! client sent them; those that read (hover, code actions, lenses, pull
//! diagnostics) take the lock briefly and answer from the document's last
//! analysis. Slow work (benchmarks) runs as a spawned task that reports
//! through `$/progress` and stops when cancelled. Diagnostics are pushed by a
//! single publisher task, in the order documents changed.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Value};
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};
use tracing::{info, warn};

use crate::bench::{self, BenchRequest};
use crate::config::{Settings, TritonNames};
use crate::model::triton_names;
use crate::text::TextRange;

use super::actions::{self, EXPLAIN_KIND, FIX_ALL_KIND, SUPPRESS_KIND};
use super::bench_view;
use super::convert::Encoding;
use super::document::Document;
use super::framing::Frames;
use super::history;
use super::hover;
use super::lens;
use super::rewrite;
use super::state::{file_path, BenchState, ClientCaps, Publish, State};

pub const COMMANDS: &[&str] = &[
    "kernel-lsp.benchmark",
    "kernel-lsp.rewrite",
    "kernel-lsp.history",
    "kernel-lsp.timeline",
    "kernel-lsp.explain",
    "kernel-lsp.fixAll",
];

pub struct Server {
    client: Client,
    state: Arc<Mutex<State>>,
    publish_tx: mpsc::UnboundedSender<Publish>,
    next_token: AtomicU64,
    /// An invalid-settings message from `initialize`, shown once the client can receive it.
    init_error: Mutex<Option<String>>,
    triton_names: NamesCache,
    compiling: super::compile::Compiling,
}

/// The `triton.language` names of each configured interpreter, for KL005:
/// `None` while it is being asked (the bundled list meanwhile).
type NamesCache = Arc<Mutex<HashMap<String, Option<std::result::Result<Arc<TritonNames>, String>>>>>;

/// How long the configured interpreter may take to import Triton and list its names.
const TRITON_NAMES_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// `settings` with the names of its interpreter's Triton where they are known;
/// and the interpreter to ask, the first time it is seen.
fn with_triton_names(cache: &NamesCache, settings: Arc<Settings>) -> (Arc<Settings>, Option<String>) {
    let Some(python) = settings.python.clone() else { return (settings, None) };
    let mut cache = lock_any(cache);
    match cache.get(&python) {
        None => {
            cache.insert(python.clone(), None);
            (settings, Some(python))
        }
        Some(None) => (settings, None),
        Some(Some(Ok(names))) => {
            let mut s = (*settings).clone();
            s.triton_names = Some(names.clone());
            (Arc::new(s), None)
        }
        Some(Some(Err(why))) => {
            let mut s = (*settings).clone();
            s.triton_names_fallback = Some(why.clone());
            (Arc::new(s), None)
        }
    }
}

fn lock_any<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic while holding the lock must not take every later request down with it.
    state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// LSP's `RequestFailed`: the request was valid but could not be carried out.
const REQUEST_FAILED: ErrorCode = ErrorCode::ServerError(-32803);

fn invalid_params(message: impl Into<String>) -> Error {
    Error { code: ErrorCode::InvalidParams, message: message.into().into(), data: None }
}

fn arg_uri(args: &[Value], i: usize) -> Result<Uri> {
    let s = args
        .get(i)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid_params(format!("argument {i} must be a document URI")))?;
    Uri::from_str(s).map_err(|e| invalid_params(format!("invalid URI {s:?}: {e}")))
}

impl Server {
    pub fn new(client: Client) -> Self {
        Self::build(client, None)
    }

    /// A server that writes its diagnostics notifications straight to `frames`
    /// (see `framing::Frames`) rather than through the client.
    pub fn with_frames(client: Client, frames: Frames) -> Self {
        Self::build(client, Some(frames))
    }

    fn build(client: Client, frames: Option<Frames>) -> Self {
        let (publish_tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(publisher(client.clone(), frames, rx));
        Server {
            client,
            state: Arc::new(Mutex::new(State::default())),
            publish_tx,
            next_token: AtomicU64::new(1),
            init_error: Mutex::new(None),
            triton_names: Arc::default(),
            compiling: Default::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Queues the document's diagnostics for pushing, unless the client pulls them.
    fn push(&self, st: &State, uri: &Uri) {
        if st.caps.pull_diagnostics {
            return;
        }
        if let Some(p) = st.publish(uri) {
            let _ = self.publish_tx.send(p);
        }
    }

    /// After diagnostics changed other than through an edit: push them, or ask a pulling client to pull.
    async fn diagnostics_changed(&self, uris: &[Uri]) {
        let caps = {
            let st = self.state();
            for uri in uris {
                self.push(&st, uri);
            }
            st.caps
        };
        if caps.pull_diagnostics && caps.diagnostic_refresh {
            let client = self.client.clone();
            spawn_client_request(async move { client.workspace_diagnostic_refresh().await });
        }
        self.views_changed(caps);
    }

    /// Asks the client to re-request lenses and hints. Spawned, with a time
    /// limit: a client that never answers must not hold a handler slot.
    fn views_changed(&self, caps: ClientCaps) {
        if caps.code_lens_refresh {
            let client = self.client.clone();
            spawn_client_request(async move { client.code_lens_refresh().await });
        }
        if caps.inlay_hint_refresh {
            let client = self.client.clone();
            spawn_client_request(async move { client.inlay_hint_refresh().await });
        }
    }

    /// Asks `python` for its `triton.language` names in a background task (a
    /// fixed script of ours, no user code; never on the edit path), then
    /// re-analyses the open documents configured with it. On failure KL005
    /// keeps the bundled list and the log says why.
    fn ask_triton_names(&self, python: String) {
        let (cache, state, tx, client) =
            (self.triton_names.clone(), self.state.clone(), self.publish_tx.clone(), self.client.clone());
        tokio::spawn(async move {
            let asked = python.clone();
            let loaded = tokio::task::spawn_blocking(move || triton_names::load(&asked, TRITON_NAMES_TIMEOUT))
                .await
                .unwrap_or_else(|e| Err(format!("the task asking it failed: {e}")));
            match &loaded {
                Ok(n) => info!("KL005 checks against triton {} of `{python}`", n.version),
                Err(why) => warn!("KL005 checks against the bundled list of triton.language names: {why}"),
            }
            lock_any(&cache).insert(python.clone(), Some(loaded.map(Arc::new)));
            let caps = {
                let mut st = lock(&state);
                let uris: Vec<Uri> = st.docs.keys().cloned().collect();
                for uri in uris {
                    let (settings, _) = st.settings_for(&uri);
                    if settings.python.as_deref() != Some(python.as_str()) {
                        continue;
                    }
                    let (settings, _) = with_triton_names(&cache, settings);
                    let Some(doc) = st.docs.get_mut(&uri) else { continue };
                    if *doc.settings == *settings {
                        continue;
                    }
                    doc.settings = settings;
                    doc.reanalyze();
                    if !st.caps.pull_diagnostics {
                        if let Some(p) = st.publish(&uri) {
                            let _ = tx.send(p);
                        }
                    }
                }
                st.caps
            };
            if caps.pull_diagnostics && caps.diagnostic_refresh {
                spawn_client_request(async move { client.workspace_diagnostic_refresh().await });
            }
        });
    }

    /// Re-reads every open document's settings and re-analyses it.
    async fn reload_settings(&self) {
        let mut ask = Vec::new();
        let (uris, errors) = {
            let mut st = self.state();
            let uris: Vec<Uri> = st.docs.keys().cloned().collect();
            let mut errors = Vec::new();
            for uri in &uris {
                let (settings, error) = st.settings_for(uri);
                let (settings, python) = with_triton_names(&self.triton_names, settings);
                ask.extend(python);
                errors.extend(error);
                if let Some(doc) = st.docs.get_mut(uri) {
                    if *doc.settings != *settings {
                        doc.settings = settings;
                        doc.reanalyze();
                    }
                }
            }
            errors.sort();
            errors.dedup();
            (uris, errors)
        };
        for python in ask {
            self.ask_triton_names(python);
        }
        for e in errors {
            self.client.show_message(MessageType::ERROR, format!("kernel-lsp: {e}")).await;
        }
        self.diagnostics_changed(&uris).await;
    }

    async fn apply_editor_settings(&self, value: &Value) {
        match super::settings::editor_settings(value) {
            Ok(v) => {
                self.state().editor = v;
                self.reload_settings().await;
            }
            Err(e) => {
                warn!("invalid settings: {e}");
                self.client
                    .show_message(
                        MessageType::ERROR,
                        format!("kernel-lsp: invalid settings, keeping the previous ones: {e}"),
                    )
                    .await;
            }
        }
    }

    /// Answers a message the framing layer could not pass on (see `framing`).
    pub async fn invalid_message(&self, params: Value) -> Result<Value> {
        if params.get("parse").and_then(Value::as_bool).unwrap_or(false) {
            Err(Error::parse_error())
        } else {
            Err(Error::invalid_request())
        }
    }

    pub async fn work_done_progress_cancel(&self, params: WorkDoneProgressCancelParams) {
        let key = token_key(&params.token);
        if let Some(handle) = self.state().runs.remove(&key) {
            info!("run {key} cancelled by the client");
            handle.abort();
        }
    }

    /// The client's progress token, or one we create when the client supports it.
    async fn progress_token(
        &self,
        token: Option<ProgressToken>,
        caps: ClientCaps,
        what: &str,
    ) -> Option<ProgressToken> {
        match token {
            Some(t) => Some(t),
            None if caps.work_done_progress => {
                let t = NumberOrString::String(format!(
                    "kernel-lsp/{what}/{}",
                    self.next_token.fetch_add(1, Ordering::Relaxed)
                ));
                let created =
                    tokio::time::timeout(CLIENT_TIMEOUT, self.client.create_work_done_progress(t.clone())).await;
                matches!(created, Ok(Ok(()))).then_some(t)
            }
            None => None,
        }
    }

    async fn benchmark(&self, args: &[Value], token: Option<ProgressToken>) -> Result<Option<Value>> {
        let uri = arg_uri(args, 0)?;
        let path = file_path(&uri).ok_or_else(|| invalid_params("benchmark needs a file: URI"))?;
        let (settings, reference, caps) = {
            let mut st = self.state();
            let (settings, reference) = match st.docs.get(&uri) {
                Some(doc) => (doc.settings.clone(), doc.result.reference.clone()),
                None => (st.settings_for(&uri).0, None),
            };
            let caps = st.caps;
            let entry = st.bench.entry(uri.clone()).or_default();
            if entry.running {
                return Err(Error {
                    code: REQUEST_FAILED,
                    message: "a benchmark of this file is already running".into(),
                    data: None,
                });
            }
            entry.running = true;
            (settings, reference, caps)
        };
        let token = self.progress_token(token, caps, "benchmark").await;
        let key = token.as_ref().map(token_key).unwrap_or_else(|| format!("untracked/{}", uri.as_str()));
        let reference = reference.map(|r| path.parent().map(|d| d.join(&r)).unwrap_or_else(|| r.into()));
        let request = BenchRequest {
            candidate: path.clone(),
            reference,
            settings: (*settings).clone(),
            python: None,
            overrides: Vec::new(),
            cpu: args.get(1).and_then(|o| o.get("cpu")).and_then(Value::as_bool).unwrap_or(false),
            reduced: args.get(1).and_then(|o| o.get("reduced")).and_then(Value::as_bool).unwrap_or(false),
            full_size: args.get(1).and_then(|o| o.get("full_size")).and_then(Value::as_bool).unwrap_or(false),
            timeout: None,
            record_history: true,
            origin: None,
            sandbox: None,
        };
        let (progress_tx, mut progress_rx) = mpsc::unbounded_channel::<String>();
        let task = tokio::spawn(bench::run(request, move |m| {
            let _ = progress_tx.send(m);
        }));
        // Dropping this guard (the request was cancelled with `$/cancelRequest`, or
        // finished) stops the run and marks it no longer running.
        let guard = RunGuard {
            state: self.state.clone(),
            uri: uri.clone(),
            key: key.clone(),
            handle: task.abort_handle(),
            on_drop: |st, uri| {
                if let Some(b) = st.bench.get_mut(uri) {
                    b.running = false;
                }
            },
        };
        self.state().runs.insert(key, task.abort_handle());
        self.views_changed(caps);

        let progress = match token {
            Some(t) => Some(
                self.client
                    .progress(t, "Benchmark vs reference")
                    .with_message(path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())
                    .with_cancel_button()
                    .begin()
                    .await,
            ),
            None => None,
        };
        let outcome = relay_progress(progress.as_ref(), &mut progress_rx, task).await;
        if let Some(p) = progress {
            let done = match &outcome {
                Ok(Ok(r)) => bench_view::lens_title(r),
                Ok(Err(e)) => e.to_string(),
                Err(_) => "cancelled".to_string(),
            };
            p.finish_with_message(done).await;
        }
        drop(guard);
        let result = match outcome {
            Err(_) => {
                // The lens and hints leave "Benchmarking…" at once, not at the next edit.
                self.views_changed(caps);
                return Err(Error {
                    code: ErrorCode::RequestCancelled,
                    message: "benchmark cancelled".into(),
                    data: None,
                });
            }
            Ok(Err(e)) => {
                self.client.show_message(MessageType::ERROR, format!("kernel-lsp benchmark: {e}")).await;
                self.views_changed(caps);
                // `shown`: the message is on screen already; a client shows it once.
                return Err(Error {
                    code: REQUEST_FAILED,
                    message: e.to_string().into(),
                    data: Some(json!({"shown": true})),
                });
            }
            Ok(Ok(r)) => r,
        };
        {
            let mut st = self.state();
            let (diagnostics, version) = match (st.docs.get(&uri), &result.error) {
                (Some(doc), Some(e)) => {
                    let fallback = doc
                        .result
                        .classes
                        .iter()
                        .find(|c| c.name == "ModelNew")
                        .map(|c| c.range)
                        .unwrap_or(TextRange::new(0, doc.line_text(0).len()));
                    let d =
                        bench_view::error_diagnostic(e, &path, doc.text(), doc.line_index(), fallback, &doc.settings);
                    (vec![d], doc.version)
                }
                (Some(doc), None) => (Vec::new(), doc.version),
                (None, _) => (Vec::new(), 0),
            };
            st.bench
                .insert(uri.clone(), BenchState { running: false, result: Some(result.clone()), version, diagnostics });
        }
        self.diagnostics_changed(std::slice::from_ref(&uri)).await;
        serde_json::to_value(&result).map(Some).map_err(|e| Error::internal_error().tap_message(e.to_string()))
    }

    /// Waits (at most two seconds) until the analysis of the document's
    /// current text has landed: whatever answers from the analysis (a pull,
    /// quick fixes and fix-all, code lens, inlay hints, hover) must not read
    /// the analysis of an older text, whose byte ranges no longer fit it.
    async fn analyzed(&self, uri: &Uri) {
        for _ in 0..1000 {
            if self.state().docs.get(uri).is_none_or(|d| d.is_analyzed()) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }

    async fn fix_all_command(&self, args: &[Value]) -> Result<Option<Value>> {
        let uri = arg_uri(args, 0)?;
        self.analyzed(&uri).await;
        let (edits, version, caps) = {
            let st = self.state();
            let doc = st.docs.get(&uri).ok_or_else(|| invalid_params(format!("{} is not open", uri.as_str())))?;
            (actions::fix_all(doc, st.encoding), doc.version, st.caps)
        };
        if edits.is_empty() {
            return Ok(Some(Value::Bool(false)));
        }
        if !caps.apply_edit {
            return Err(Error {
                code: REQUEST_FAILED,
                message: "the client cannot apply workspace edits; use the source.fixAll.kernel-lsp code action".into(),
                data: None,
            });
        }
        let edit = if caps.document_changes {
            WorkspaceEdit {
                document_changes: Some(DocumentChanges::Edits(vec![TextDocumentEdit {
                    text_document: OptionalVersionedTextDocumentIdentifier { uri: uri.clone(), version: Some(version) },
                    edits: edits.into_iter().map(OneOf::Left).collect(),
                }])),
                ..Default::default()
            }
        } else {
            actions::edit(&uri, edits)
        };
        let response = tokio::time::timeout(CLIENT_TIMEOUT, self.client.apply_edit(edit)).await.map_err(|_| {
            Error { code: REQUEST_FAILED, message: "the client did not answer workspace/applyEdit".into(), data: None }
        })??;
        Ok(Some(Value::Bool(response.applied)))
    }

    fn history_command(&self, args: &[Value]) -> Result<Option<Value>> {
        let uri = arg_uri(args, 0)?;
        let path = file_path(&uri).ok_or_else(|| invalid_params("history needs a file: URI"))?;
        let root = self.state().root_for(&path).ok_or_else(|| invalid_params("no workspace root for this file"))?;
        Ok(Some(Value::String(history::table(&root, Some(&path)))))
    }

    /// The rewrite stages recorded for the file in `.kernel-lsp/timeline.jsonl`
    /// at its project root (where the pipeline writes them).
    fn timeline_command(&self, args: &[Value]) -> Result<Option<Value>> {
        let uri = arg_uri(args, 0)?;
        let path = file_path(&uri).ok_or_else(|| invalid_params("timeline needs a file: URI"))?;
        let root = crate::bench::history::project_root(&path);
        let rel = path.strip_prefix(&root).unwrap_or(&path).display().to_string();
        let records = crate::llm::timeline::read(&root).map_err(|e| Error {
            code: REQUEST_FAILED,
            message: format!("cannot read the timeline: {e}").into(),
            data: None,
        })?;
        let mine: Vec<_> = records.into_iter().filter(|r| r.file == rel).collect();
        Ok(Some(Value::String(crate::llm::timeline::render_table(&mine))))
    }

    /// `kernel-lsp.rewrite [uri, action, range?, options?]`: runs the LLM
    /// pipeline on the file as saved, as a cancellable task with progress;
    /// offers the verified winner through `workspace/applyEdit` with a change
    /// annotation that needs confirmation.
    async fn rewrite_command(&self, args: &[Value], token: Option<ProgressToken>) -> Result<Option<Value>> {
        let uri = arg_uri(args, 0)?;
        let path = file_path(&uri).ok_or_else(|| invalid_params("rewrite needs a file: URI"))?;
        let action = rewrite::parse_action(args.get(1)).map_err(invalid_params)?;
        let options = rewrite::parse_options(args.get(3)).map_err(invalid_params)?;
        let failed = |message: String| Error { code: REQUEST_FAILED, message: message.into(), data: None };
        let on_disk =
            std::fs::read_to_string(&path).map_err(|e| failed(format!("cannot read {}: {e}", path.display())))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let (settings, version, caps, encoding) = {
            let mut st = self.state();
            let (settings, version) = match st.docs.get(&uri) {
                Some(doc) => {
                    if doc.text() != on_disk {
                        return Err(failed(format!(
                            "{name} has unsaved changes: save it first (the rewrite starts from the file on disk)"
                        )));
                    }
                    (doc.settings.clone(), Some(doc.version))
                }
                None => (st.settings_for(&uri).0, None),
            };
            if !st.rewrites.insert(uri.clone()) {
                return Err(failed("a rewrite of this file is already running".into()));
            }
            (settings, version, st.caps, st.encoding)
        };
        let mut request = crate::llm::RewriteRequest::new(path.clone(), action, (*settings).clone());
        request.text = Some(on_disk.clone());
        request.cpu = options.cpu;
        request.overrides = options.overrides;
        request.candidates = options.candidates;
        request.repairs = options.repairs;
        request.bench_timeout = options.bench_timeout;
        let (progress_tx, mut progress_rx) = mpsc::unbounded_channel::<String>();
        let task = tokio::spawn(crate::llm::rewrite(request, move |ev| {
            let _ = progress_tx.send(rewrite::stage_message(&ev));
        }));
        // Dropping the guard (finished, or `$/cancelRequest`) stops the run and
        // marks the document free for the next rewrite.
        let mut guard = RunGuard {
            state: self.state.clone(),
            uri: uri.clone(),
            key: format!("untracked-rewrite/{}", uri.as_str()),
            handle: task.abort_handle(),
            on_drop: |st, uri| {
                st.rewrites.remove(uri);
            },
        };
        let token = self.progress_token(token, caps, "rewrite").await;
        if let Some(t) = &token {
            guard.key = token_key(t);
        }
        self.state().runs.insert(guard.key.clone(), task.abort_handle());
        let progress = match token {
            Some(t) => Some(
                self.client
                    .progress(t, format!("{} with LLM", action.title()))
                    .with_message(name.clone())
                    .with_cancel_button()
                    .begin()
                    .await,
            ),
            None => None,
        };
        let outcome = relay_progress(progress.as_ref(), &mut progress_rx, task).await;
        if let Some(p) = progress {
            let done = match &outcome {
                Ok(Ok(o)) => o.title.clone(),
                Ok(Err(e)) => e.to_string(),
                Err(_) => "cancelled".to_string(),
            };
            p.finish_with_message(done).await;
        }
        drop(guard);
        let outcome = match outcome {
            Err(_) => {
                return Err(Error {
                    code: ErrorCode::RequestCancelled,
                    message: "rewrite cancelled".into(),
                    data: None,
                })
            }
            Ok(Err(e)) => {
                // LlmError texts never hold the key (the client scrubs it).
                warn!("rewrite of {} failed: {e}", path.display());
                self.client.show_message(MessageType::ERROR, format!("kernel-lsp rewrite: {e}")).await;
                // `shown`: the message is on screen already; a client shows it once.
                return Err(Error { data: Some(json!({"shown": true})), ..failed(e.to_string()) });
            }
            Ok(Ok(o)) => o,
        };
        let summary = rewrite::candidates_summary(&outcome);
        let Some(new_text) = outcome.new_text.clone() else {
            let message = format!("{}\n{summary}", outcome.title);
            self.client.show_message(MessageType::WARNING, format!("kernel-lsp rewrite: {message}")).await;
            return Ok(Some(rewrite::result_value(&outcome, None, None, &message)));
        };
        // Offer the edit only against the text the run started from.
        let unchanged = {
            let st = self.state();
            match (st.docs.get(&uri), version) {
                (Some(doc), Some(v)) => doc.version == v && doc.text() == on_disk,
                (None, None) => std::fs::read_to_string(&path).is_ok_and(|t| t == on_disk),
                _ => false,
            }
        };
        if !unchanged {
            let diff = outcome.diff.clone().unwrap_or_default();
            let message = format!(
                "{}: not applied, {name} changed during the rewrite. The verified diff:\n{diff}",
                outcome.title
            );
            info!("rewrite of {} not offered, the file changed:\n{diff}", path.display());
            self.client.show_message(MessageType::WARNING, format!("kernel-lsp rewrite: {message}")).await;
            return Ok(Some(rewrite::result_value(&outcome, None, Some(false), &message)));
        }
        let edit = rewrite::confirmed_edit(&uri, version, &on_disk, &new_text, encoding, &outcome.title, &summary);
        if !caps.apply_edit {
            // The client applies what the command returns (through its own preview).
            return Ok(Some(rewrite::result_value(&outcome, Some(&edit), None, &outcome.title)));
        }
        // The user reviews the preview before the client answers: wait as long as a person may.
        let response =
            tokio::time::timeout(std::time::Duration::from_secs(30 * 60), self.client.apply_edit(edit)).await;
        let applied = match response {
            Ok(Ok(r)) => r.applied,
            Ok(Err(e)) => {
                warn!("workspace/applyEdit failed: {e}");
                false
            }
            Err(_) => false,
        };
        let message = format!("{} — {}", outcome.title, if applied { "applied" } else { "not applied" });
        // The edit went out as workspace/applyEdit already: it is not returned
        // again, or the client would preview it a second time.
        Ok(Some(rewrite::result_value(&outcome, None, Some(applied), &message)))
    }
}

trait TapMessage {
    fn tap_message(self, m: String) -> Self;
}
impl TapMessage for Error {
    fn tap_message(mut self, m: String) -> Self {
        self.message = m.into();
        self
    }
}

struct RunGuard {
    state: Arc<Mutex<State>>,
    uri: Uri,
    key: String,
    handle: tokio::task::AbortHandle,
    /// Marks the document's run finished.
    on_drop: fn(&mut State, &Uri),
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.handle.abort();
        let mut st = lock(&self.state);
        st.runs.remove(&self.key);
        (self.on_drop)(&mut st, &self.uri);
    }
}

type CancellableProgress =
    tower_lsp_server::OngoingProgress<tower_lsp_server::Unbounded, tower_lsp_server::Cancellable>;

/// Relays a spawned task's progress messages to the client until the task ends.
async fn relay_progress<T>(
    progress: Option<&CancellableProgress>,
    messages: &mut mpsc::UnboundedReceiver<String>,
    mut task: tokio::task::JoinHandle<T>,
) -> std::result::Result<T, tokio::task::JoinError> {
    loop {
        tokio::select! {
            Some(message) = messages.recv() => {
                if let Some(p) = progress {
                    p.report_with_message(message, None).await;
                }
            }
            joined = &mut task => {
                // Messages sent just before the task ended still go out, in order.
                while let Ok(message) = messages.try_recv() {
                    if let Some(p) = progress {
                        p.report_with_message(message, None).await;
                    }
                }
                return joined;
            }
        }
    }
}

/// How long the server waits for the client to answer one of its requests.
const CLIENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

fn spawn_client_request(fut: impl std::future::Future<Output = Result<()>> + Send + 'static) {
    tokio::spawn(async move {
        match tokio::time::timeout(CLIENT_TIMEOUT, fut).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => warn!("client refused a refresh: {e}"),
            Err(_) => warn!("client did not answer a refresh request"),
        }
    });
}

fn token_key(t: &ProgressToken) -> String {
    match t {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.clone(),
    }
}

/// Sends queued diagnostics in order; when several versions of one document
/// are waiting, only the newest goes out.
async fn publisher(client: Client, frames: Option<Frames>, mut rx: mpsc::UnboundedReceiver<Publish>) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while let Ok(p) = rx.try_recv() {
            batch.push(p);
        }
        let mut latest: Vec<Publish> = Vec::with_capacity(batch.len());
        for p in batch {
            latest.retain(|q| q.uri != p.uri);
            latest.push(p);
        }
        for p in latest {
            let version = p.version;
            match &frames {
                Some(frames) => {
                    let params =
                        PublishDiagnosticsParams { uri: p.uri, diagnostics: p.diagnostics, version: p.version };
                    frames.notify("textDocument/publishDiagnostics", &params);
                }
                None => client.publish_diagnostics(p.uri, p.diagnostics, p.version).await,
            }
            tracing::trace!("published version {version:?}");
        }
    }
}

impl LanguageServer for Server {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let caps = ClientCaps::from(&params.capabilities);
        let offered = params.capabilities.general.as_ref().and_then(|g| g.position_encodings.as_deref());
        let encoding = Encoding::negotiate(offered);
        let mut folders: Vec<_> = params.workspace_folders.iter().flatten().filter_map(|f| file_path(&f.uri)).collect();
        #[allow(deprecated)]
        if folders.is_empty() {
            folders.extend(params.root_uri.as_ref().and_then(file_path));
        }
        {
            let mut st = self.state();
            st.caps = caps;
            st.encoding = encoding;
            crate::bench::history::set_workspace_roots(folders.clone());
            st.folders = folders;
            if let Some(options) = &params.initialization_options {
                match super::settings::editor_settings(options) {
                    Ok(v) => st.editor = v,
                    Err(e) => {
                        *self.init_error.lock().unwrap_or_else(|p| p.into_inner()) =
                            Some(format!("kernel-lsp: invalid initialization options, using defaults: {e}"))
                    }
                }
            }
        }
        info!(?encoding, pull = caps.pull_diagnostics, "initialized");
        let code_action_kinds = vec![
            CodeActionKind::QUICKFIX,
            CodeActionKind::from(EXPLAIN_KIND),
            CodeActionKind::from(SUPPRESS_KIND),
            CodeActionKind::SOURCE_FIX_ALL,
            CodeActionKind::from(FIX_ALL_KIND),
            CodeActionKind::REFACTOR_REWRITE,
        ];
        let capabilities = ServerCapabilities {
            position_encoding: Some(encoding.kind()),
            text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                will_save: None,
                will_save_wait_until: None,
                save: Some(TextDocumentSyncSaveOptions::Supported(true)),
            })),
            hover_provider: Some(HoverProviderCapability::Simple(true)),
            completion_provider: Some(CompletionOptions {
                trigger_characters: Some(vec![".".to_string()]),
                ..Default::default()
            }),
            code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
                code_action_kinds: Some(code_action_kinds),
                work_done_progress_options: Default::default(),
                resolve_provider: Some(true),
            })),
            code_lens_provider: Some(CodeLensOptions { resolve_provider: Some(false) }),
            inlay_hint_provider: Some(OneOf::Left(true)),
            execute_command_provider: Some(ExecuteCommandOptions {
                commands: COMMANDS.iter().map(|c| c.to_string()).collect(),
                work_done_progress_options: WorkDoneProgressOptions { work_done_progress: Some(true) },
            }),
            diagnostic_provider: caps.pull_diagnostics.then(|| {
                DiagnosticServerCapabilities::Options(DiagnosticOptions {
                    identifier: Some("kernel-lsp".to_string()),
                    inter_file_dependencies: false,
                    workspace_diagnostics: false,
                    work_done_progress_options: Default::default(),
                })
            }),
            workspace: Some(WorkspaceServerCapabilities {
                workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                    supported: Some(true),
                    change_notifications: Some(OneOf::Left(true)),
                }),
                file_operations: None,
            }),
            ..Default::default()
        };
        Ok(InitializeResult {
            capabilities,
            server_info: Some(ServerInfo {
                name: "kernel-lsp".to_string(),
                version: Some(env!("CARGO_PKG_VERSION").to_string()),
            }),
            offset_encoding: None,
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        let error = self.init_error.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(e) = error {
            self.client.show_message(MessageType::ERROR, e).await;
        }
        let caps = self.state().caps;
        if caps.watched_files_dynamic {
            let watchers = ["**/kernel-lsp.toml", "**/pyproject.toml"]
                .iter()
                .map(|g| FileSystemWatcher { glob_pattern: GlobPattern::String(g.to_string()), kind: None })
                .collect();
            let options = serde_json::to_value(DidChangeWatchedFilesRegistrationOptions { watchers }).ok();
            let registration = Registration {
                id: "kernel-lsp/config-files".to_string(),
                method: "workspace/didChangeWatchedFiles".to_string(),
                register_options: options,
            };
            if let Err(e) = self.client.register_capability(vec![registration]).await {
                warn!("could not watch configuration files: {e}");
            }
        }
    }

    async fn shutdown(&self) -> Result<()> {
        super::SHUTDOWN_REQUESTED.store(true, Ordering::SeqCst);
        let mut st = self.state();
        for (_, handle) in st.runs.drain() {
            handle.abort();
        }
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let item = params.text_document;
        let evicted;
        let ask;
        let error = {
            let mut st = self.state();
            let (settings, error) = st.settings_for(&item.uri);
            let settings = with_triton_names(&self.triton_names, settings);
            ask = settings.1;
            let settings = settings.0;
            st.docs.insert(item.uri.clone(), Document::new(&item.text, item.version, settings));
            evicted = st.touch(&item.uri);
            if let Some(b) = st.bench.get_mut(&item.uri) {
                b.diagnostics.clear();
            }
            self.push(&st, &item.uri);
            error
        };
        drop(evicted);
        self.compiling.schedule(&self.state, &self.publish_tx, &self.client, &item.uri, true);
        if let Some(python) = ask {
            self.ask_triton_names(python);
        }
        if let Some(e) = error {
            self.client.show_message(MessageType::ERROR, format!("kernel-lsp: {e}")).await;
        }
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let began = std::time::Instant::now();
        let uri = params.text_document.uri;
        let mut st = self.state();
        let encoding = st.encoding;
        let Some(doc) = st.docs.get_mut(&uri) else {
            warn!("didChange for {} which is not open; ignored", uri.as_str());
            return;
        };
        if params.text_document.version <= doc.version {
            warn!(
                "didChange for {} goes from version {} to {}",
                uri.as_str(),
                doc.version,
                params.text_document.version
            );
        }
        for w in doc.apply_changes(params.text_document.version, &params.content_changes, encoding) {
            warn!("{}: {w}", uri.as_str());
        }
        let job = doc.analysis_job();
        let reparse = if doc.reparsed_incrementally() { "incremental" } else { "fresh" };
        let edited = began.elapsed();
        let evicted = st.touch(&uri);
        if let Some(b) = st.bench.get_mut(&uri) {
            b.diagnostics.clear();
        }
        st.compile.remove(&uri);
        drop(st);
        self.compiling.schedule(&self.state, &self.publish_tx, &self.client, &uri, false);
        // The analysis runs off the state lock, so hovers, code actions and the
        // next edit never wait for it; a result for an outdated version is dropped.
        let state = self.state.clone();
        let publish_tx = self.publish_tx.clone();
        // On a runtime worker rather than a blocking-pool thread: a fresh thread
        // gets its own malloc arena, which cost ~10 MB of RSS per server.
        tokio::spawn(async move {
            let started = began.elapsed();
            let result = job.run();
            let analysed = began.elapsed();
            {
                let st = &mut *lock(&state);
                let installed = st.docs.get_mut(&uri).is_some_and(|doc| doc.install(job.version, result));
                if installed && !st.caps.pull_diagnostics {
                    if let Some(p) = st.publish(&uri) {
                        let _ = publish_tx.send(p);
                    }
                }
            }
            tracing::debug!(
                "version {}: edit and {reparse} reparse {edited:?}, analysis {:?} (started after {started:?}), ready to publish after {:?}",
                job.version,
                analysed - started,
                began.elapsed()
            );
            // The trees this edit evicted are freed off the lock, once the publisher has had its turn.
            if !evicted.is_empty() {
                tokio::task::yield_now().await;
                drop(evicted);
            }
        });
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        let name =
            file_path(&params.text_document.uri).and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
        if matches!(name.as_deref(), Some("kernel-lsp.toml" | "pyproject.toml")) {
            self.reload_settings().await;
        }
        self.compiling.schedule(&self.state, &self.publish_tx, &self.client, &params.text_document.uri, true);
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        let uri = params.text_document.uri;
        let pull = {
            let mut st = self.state();
            st.docs.remove(&uri);
            st.bench.remove(&uri);
            st.compile.remove(&uri);
            st.recent.retain(|u| *u != uri);
            self.compiling.forget(&uri);
            st.caps.pull_diagnostics
        };
        if !pull {
            let _ = self.publish_tx.send(Publish { uri, version: None, diagnostics: Vec::new() });
        }
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        let mut value = params.settings;
        let wants_pull = value.is_null() || value.as_object().is_some_and(|m| m.is_empty());
        if wants_pull && self.state().caps.configuration {
            let item = ConfigurationItem { scope_uri: None, section: Some("kernel-lsp".to_string()) };
            if let Ok(mut items) = self.client.configuration(vec![item]).await {
                value = items.pop().unwrap_or(Value::Null);
            }
        }
        self.apply_editor_settings(&value).await;
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        {
            let mut st = self.state();
            let removed: Vec<_> = params.event.removed.iter().filter_map(|f| file_path(&f.uri)).collect();
            st.folders.retain(|f| !removed.contains(f));
            st.folders.extend(params.event.added.iter().filter_map(|f| file_path(&f.uri)));
            crate::bench::history::set_workspace_roots(st.folders.clone());
        }
        self.reload_settings().await;
    }

    async fn did_change_watched_files(&self, _: DidChangeWatchedFilesParams) {
        self.reload_settings().await;
    }

    async fn diagnostic(&self, params: DocumentDiagnosticParams) -> Result<DocumentDiagnosticReportResult> {
        let uri = &params.text_document.uri;
        self.analyzed(uri).await;
        let st = self.state();
        let result_id = st.docs.get(uri).map(|d| d.version.to_string());
        let items = st.lsp_diagnostics(uri);
        Ok(DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Full(
            RelatedFullDocumentDiagnosticReport {
                related_documents: None,
                full_document_diagnostic_report: FullDocumentDiagnosticReport { result_id, items },
            },
        )))
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        self.analyzed(&params.text_document.uri).await;
        let st = self.state();
        let uri = &params.text_document.uri;
        let Some(doc) = st.docs.get(uri) else {
            return Ok(None);
        };
        let bench = st.bench.get(uri).map(|b| b.diagnostics.as_slice()).unwrap_or(&[]);
        Ok(Some(actions::code_actions(uri, doc, bench, &params, st.encoding, st.caps.code_action_resolve)))
    }

    async fn code_action_resolve(&self, action: CodeAction) -> Result<CodeAction> {
        Ok(actions::resolve(action))
    }

    async fn code_lens(&self, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        self.analyzed(&params.text_document.uri).await;
        let st = self.state();
        let uri = &params.text_document.uri;
        let Some(doc) = st.docs.get(uri) else {
            return Ok(None);
        };
        Ok(Some(lens::code_lenses(uri, doc, st.bench.get(uri), st.encoding)))
    }

    async fn inlay_hint(&self, params: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        self.analyzed(&params.text_document.uri).await;
        let st = self.state();
        let uri = &params.text_document.uri;
        let Some(doc) = st.docs.get(uri) else {
            return Ok(None);
        };
        let mut hints = lens::inlay_hints(doc, st.bench.get(uri), st.encoding);
        hints.extend(super::compile::inlay_hints(&st, uri, st.encoding));
        Ok(Some(hints))
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        self.analyzed(&params.text_document_position_params.text_document.uri).await;
        let st = self.state();
        let p = &params.text_document_position_params;
        let Some(doc) = st.docs.get(&p.text_document.uri) else {
            return Ok(None);
        };
        let offset = doc.offset(p.position, st.encoding);
        let markdown = hover::hover_markdown(doc, offset, st.bench.get(&p.text_document.uri));
        let compiled = super::compile::hover(&st, &p.text_document.uri, offset);
        let markdown = match (markdown, compiled) {
            (Some(a), Some(b)) => Some(format!("{a}\n\n---\n\n{b}")),
            (a, b) => a.or(b),
        };
        Ok(markdown.map(|value| Hover {
            contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value }),
            range: None,
        }))
    }

    async fn completion(&self, params: CompletionParams) -> Result<Option<CompletionResponse>> {
        let st = self.state();
        let p = &params.text_document_position;
        let Some(doc) = st.docs.get(&p.text_document.uri) else {
            return Ok(None);
        };
        let offset = doc.offset(p.position, st.encoding);
        let before = &doc.text()[..offset];
        let partial = before.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if !partial.ends_with("tl.") {
            return Ok(None);
        }
        let items = crate::model::triton_names::all()
            .map(|name| CompletionItem {
                label: name.to_string(),
                kind: Some(CompletionItemKind::FUNCTION),
                detail: Some(format!("triton.language.{name}")),
                ..Default::default()
            })
            .collect();
        Ok(Some(CompletionResponse::Array(items)))
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        let args = &params.arguments;
        match params.command.as_str() {
            "kernel-lsp.benchmark" => {
                self.benchmark(args, params.work_done_progress_params.work_done_token.clone()).await
            }
            "kernel-lsp.rewrite" => {
                self.rewrite_command(args, params.work_done_progress_params.work_done_token.clone()).await
            }
            "kernel-lsp.history" => self.history_command(args),
            "kernel-lsp.timeline" => self.timeline_command(args),
            "kernel-lsp.explain" => {
                let code = args
                    .first()
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid_params("argument 0 must be a rule code"))?;
                hover::rule_doc(code)
                    .map(|d| Some(Value::String(d)))
                    .ok_or_else(|| invalid_params(format!("unknown rule {code:?}")))
            }
            "kernel-lsp.fixAll" => self.fix_all_command(args).await,
            other => Err(invalid_params(format!("unknown command {other:?}; known: {}", COMMANDS.join(", ")))),
        }
    }
}
