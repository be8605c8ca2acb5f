//! The `LanguageServer` implementation: this file holds the server's state
//! and what the handlers share; each request or notification handler is one
//! file under `server/` (`did_change.rs`, `hover.rs`, ...), a method of
//! `Server` that the trait method below calls. A new handler is a new file.
//!
//! Two kinds of handlers, as in ruff's server: those that change state
//! (`didOpen`, `didChange`, `didClose`, configuration, workspace folders) take
//! the state lock before their first `.await` and so apply in the order the
//! client sent them; those that read (hover, code actions, lenses, pull
//! diagnostics) take the lock briefly and answer from the document's last
//! analysis, awaiting (`Server::analyzed`) the analysis of the current text
//! when it has not landed yet. Slow work (benchmarks, rewrites) runs as a
//! spawned task under one progress-and-cancel helper (`with_progress`) that
//! reports through `$/progress` and stops it when cancelled. Diagnostics are
//! pushed as frames by the thread that publishes them, under the state lock,
//! in the order the results were installed (`state::Publisher`).

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
use crate::model::triton_api::TritonApi;
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
use super::state::{file_path, BenchState, ClientCaps, Publish, Publisher, State};

mod benchmark;
mod call_hierarchy;
mod code_action;
mod code_lens;
mod completion;
mod definition;
mod diagnostic;
mod did_change;
mod did_change_configuration;
mod did_change_workspace_folders;
mod did_close;
mod did_open;
mod document_symbol;
mod execute_command;
mod fix_all;
mod hover_request;
mod initialize;
mod initialized;
mod inlay_hint;
mod references;
mod rewrite_command;
mod signature_help;
mod workspace_symbol;

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
    publish_tx: Publisher,
    next_token: AtomicU64,
    /// An invalid-settings message from `initialize`, shown once the client can receive it.
    init_error: Mutex<Option<String>>,
    triton_names: NamesCache,
    /// The `triton.language` API of each configured interpreter, once read
    /// (`lsp::triton_api_load`); the embedded database until then and without one.
    apis: ApiCache,
    compiling: super::compile::Compiling,
    /// The kernels of the workspace's files, for `workspace/symbol` (`workspace_symbol.rs`).
    workspace_kernels: workspace_symbol::Kernels,
}

type ApiCache = Arc<Mutex<HashMap<String, Arc<TritonApi>>>>;

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
    pub(crate) fn with_frames(client: Client, frames: Frames) -> Self {
        Self::build(client, Some(frames))
    }

    fn build(client: Client, frames: Option<Frames>) -> Self {
        let publish_tx = match frames {
            Some(frames) => Publisher::Frames(frames),
            None => {
                let (tx, rx) = mpsc::unbounded_channel();
                tokio::spawn(publisher(client.clone(), rx));
                Publisher::Client(tx)
            }
        };
        Server {
            client,
            state: Arc::new(Mutex::new(State::default())),
            publish_tx,
            next_token: AtomicU64::new(1),
            init_error: Mutex::new(None),
            triton_names: Arc::default(),
            apis: Arc::default(),
            compiling: Default::default(),
            workspace_kernels: Default::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// After diagnostics changed other than through an edit: push them, or ask a pulling client to pull.
    async fn diagnostics_changed(&self, uris: &[Uri]) {
        let caps = {
            let st = self.state();
            for uri in uris {
                self.publish_tx.publish(&st, uri);
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
        let apis = self.apis.clone();
        tokio::spawn(async move {
            super::background::edits().paused(super::background::PAUSE).await;
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
                    tx.publish(&st, &uri);
                }
                st.caps
            };
            if caps.pull_diagnostics && caps.diagnostic_refresh {
                spawn_client_request(async move { client.workspace_diagnostic_refresh().await });
            }
            // The API after the names, not beside them: one import of Triton at a time.
            match super::triton_api_load::load(&python, TRITON_NAMES_TIMEOUT).await {
                Ok(api) => {
                    info!("hover and completion read triton {} of `{python}`", api.version);
                    lock_any(&apis).insert(python.clone(), Arc::new(api));
                }
                Err(why) => warn!("hover and completion read the embedded Triton API: {why}"),
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
        let mut st = self.state();
        if let Some(handle) = st.runs.remove(&key) {
            info!("run {key} cancelled by the client");
            handle.abort();
        } else {
            // The cancel may overtake its request (the transport handles
            // messages concurrently): the run is stopped when it registers.
            info!("cancel for {key}, which has no run (yet)");
            if st.early_cancels.len() >= EARLY_CANCELS_KEPT {
                st.early_cancels.pop_front();
            }
            st.early_cancels.push_back(key);
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

    /// The progress-and-cancel of a long run (a benchmark, a rewrite): the
    /// spawned `task` is registered under the client's progress token (or one
    /// made for it) so that the cancel button and `$/cancelRequest` stop it,
    /// its messages are relayed as progress until it ends, and the progress
    /// ends with `done`'s title of the result, the error, or "cancelled".
    /// However it ends (the request dropped included), the task is aborted
    /// and `run.on_drop` marks the document's run finished.
    async fn with_progress<T, E: std::fmt::Display>(
        &self,
        run: Run<'_>,
        task: tokio::task::JoinHandle<std::result::Result<T, E>>,
        mut messages: mpsc::UnboundedReceiver<String>,
        done: impl Fn(&T) -> String,
    ) -> std::result::Result<std::result::Result<T, E>, tokio::task::JoinError> {
        let mut guard = RunGuard {
            state: self.state.clone(),
            uri: run.uri.clone(),
            key: format!("untracked-{}/{}", run.what, run.uri.as_str()),
            handle: task.abort_handle(),
            on_drop: run.on_drop,
        };
        let token = self.progress_token(run.token, run.caps, run.what).await;
        if let Some(t) = &token {
            guard.key = token_key(t);
        }
        {
            let mut st = self.state();
            if let Some(i) = st.early_cancels.iter().position(|k| *k == guard.key) {
                st.early_cancels.remove(i);
                info!("run {} was cancelled before it started", guard.key);
                task.abort();
            } else {
                st.runs.insert(guard.key.clone(), task.abort_handle());
            }
        }
        if run.shown_in_views {
            self.views_changed(run.caps);
        }
        let progress = match token {
            Some(t) => {
                Some(self.client.progress(t, run.title).with_message(run.message).with_cancel_button().begin().await)
            }
            None => None,
        };
        let outcome = relay_progress(progress.as_ref(), &mut messages, task).await;
        if let Some(p) = progress {
            let message = match &outcome {
                Ok(Ok(r)) => done(r),
                Ok(Err(e)) => e.to_string(),
                Err(_) => "cancelled".to_string(),
            };
            p.finish_with_message(message).await;
        }
        drop(guard);
        outcome
    }

    /// Waits (at most two seconds) until the analysis of the document's
    /// current text has landed: whatever answers from the analysis (a pull,
    /// quick fixes and fix-all, code lens, inlay hints, hover) must not read
    /// the analysis of an older text, whose byte ranges no longer fit it. It
    /// awaits the document's analyses as they are installed (a newer edit
    /// meanwhile: the analysis of that one), not a timer.
    async fn analyzed(&self, uri: &Uri) {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
        loop {
            let (mut changes, version) = match self.state().docs.get(uri) {
                Some(doc) if !doc.is_analyzed() => (doc.analyzed_changes(), doc.version),
                _ => return,
            };
            // Closed (the document was closed or reopened): look again.
            if tokio::time::timeout_at(deadline, changes.wait_for(|v| *v >= version)).await.is_err() {
                return;
            }
        }
    }

    /// The Triton API for a document's settings: its interpreter's once read, else the embedded one.
    fn api_for(&self, settings: &Settings) -> Arc<TritonApi> {
        let Some(python) = settings.python.as_deref() else { return TritonApi::embedded() };
        lock_any(&self.apis).get(python).cloned().unwrap_or_else(TritonApi::embedded)
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
}

/// How many cancels for tokens not (yet) running are remembered.
const EARLY_CANCELS_KEPT: usize = 16;

trait TapMessage {
    fn tap_message(self, m: String) -> Self;
}
impl TapMessage for Error {
    fn tap_message(mut self, m: String) -> Self {
        self.message = m.into();
        self
    }
}

/// A long run as the client sees it: its document, the client's progress
/// token (if it sent one), what it is (`benchmark`, `rewrite`: the name of the
/// progress token made for it), the progress title and first message, and
/// how its end is marked on the document.
struct Run<'a> {
    uri: &'a Uri,
    token: Option<ProgressToken>,
    caps: ClientCaps,
    what: &'static str,
    title: String,
    message: String,
    /// Whether the code lens and inlay hints show the run (a benchmark's "Benchmarking…").
    shown_in_views: bool,
    on_drop: fn(&mut State, &Uri),
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

/// The publications waiting in `rx`, the newest of each document only (when
/// several versions of one document are queued), in the order they came.
fn newest_of_each(first: Publish, rx: &mut mpsc::UnboundedReceiver<Publish>) -> Vec<Publish> {
    let mut latest: Vec<Publish> = vec![first];
    while let Ok(p) = rx.try_recv() {
        latest.retain(|q| q.uri != p.uri);
        latest.push(p);
    }
    latest
}

/// Sends queued diagnostics through the client, in order (a server without
/// its own frames: the unit tests' `LspService`).
async fn publisher(client: Client, mut rx: mpsc::UnboundedReceiver<Publish>) {
    while let Some(first) = rx.recv().await {
        for p in newest_of_each(first, &mut rx) {
            client.publish_diagnostics(p.uri, p.diagnostics, p.version).await;
        }
    }
}

impl LanguageServer for Server {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        self.on_initialize(params).await
    }

    async fn initialized(&self, _: InitializedParams) {
        self.on_initialized().await
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
        self.on_did_open(params).await
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        self.on_did_change(params).await
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
        self.on_did_close(params).await
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        self.on_did_change_configuration(params).await
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        self.on_did_change_workspace_folders(params).await
    }

    async fn did_change_watched_files(&self, _: DidChangeWatchedFilesParams) {
        self.reload_settings().await;
    }

    async fn diagnostic(&self, params: DocumentDiagnosticParams) -> Result<DocumentDiagnosticReportResult> {
        self.on_diagnostic(params).await
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        self.on_code_action(params).await
    }

    async fn code_action_resolve(&self, action: CodeAction) -> Result<CodeAction> {
        Ok(actions::resolve(action))
    }

    async fn code_lens(&self, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        self.on_code_lens(params).await
    }

    async fn inlay_hint(&self, params: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        self.on_inlay_hint(params).await
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        self.on_hover(params).await
    }

    async fn completion(&self, params: CompletionParams) -> Result<Option<CompletionResponse>> {
        self.on_completion(params).await
    }

    async fn signature_help(&self, params: SignatureHelpParams) -> Result<Option<SignatureHelp>> {
        self.on_signature_help(params).await
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        self.on_execute_command(params).await
    }

    async fn goto_definition(&self, params: GotoDefinitionParams) -> Result<Option<GotoDefinitionResponse>> {
        self.on_goto_definition(params).await
    }

    async fn references(&self, params: ReferenceParams) -> Result<Option<Vec<Location>>> {
        self.on_references(params).await
    }

    async fn document_symbol(&self, params: DocumentSymbolParams) -> Result<Option<DocumentSymbolResponse>> {
        self.on_document_symbol(params).await
    }

    async fn symbol(&self, params: WorkspaceSymbolParams) -> Result<Option<WorkspaceSymbolResponse>> {
        self.on_workspace_symbol(params).await
    }

    async fn prepare_call_hierarchy(
        &self,
        params: CallHierarchyPrepareParams,
    ) -> Result<Option<Vec<CallHierarchyItem>>> {
        self.on_prepare_call_hierarchy(params).await
    }

    async fn incoming_calls(
        &self,
        params: CallHierarchyIncomingCallsParams,
    ) -> Result<Option<Vec<CallHierarchyIncomingCall>>> {
        self.on_incoming_calls(params).await
    }

    async fn outgoing_calls(
        &self,
        params: CallHierarchyOutgoingCallsParams,
    ) -> Result<Option<Vec<CallHierarchyOutgoingCall>>> {
        self.on_outgoing_calls(params).await
    }
}
