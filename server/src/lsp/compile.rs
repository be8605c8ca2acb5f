//! The compiler in the editor: after a pause in typing (`compile.debounce-ms`)
//! and on save, the open file's kernels are compiled by the user's Triton
//! (`crate::compile`), off the state lock and never before the static
//! diagnostics, which do not wait for it. A newer edit cancels the pending or
//! running compilation of its document; kernels that did not change come from
//! the cache, so only the changed ones reach the compiler. The result is kept
//! per document version (`State::compile`) and published merged with the
//! static diagnostics; an edit drops it until the next one lands, so no
//! compile error is ever shown at the byte ranges of an older text. The
//! resources of each kernel show on hover of its name.
//!
//! No Python or no Triton: one message says so, once per interpreter, and
//! only the static diagnostics are shown. Documents take turns, one
//! compilation at a time from its preparation to its report, and the jobs
//! of a file that may hold kernels are made only once the worker has started.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tower_lsp_server::ls_types::{MessageType, Uri};
use tower_lsp_server::Client;

use crate::compile::{self, Compiler, Resources};
use crate::diagnostic::Diagnostic;

use super::state::{file_path, Publisher, State};

/// A document's last compilation.
#[derive(Debug, Clone, Default)]
pub struct Compiled {
    /// The document version it describes.
    pub version: i32,
    pub diagnostics: Vec<Diagnostic>,
    pub resources: Vec<Resources>,
    /// The static findings the compiler settled (dropped from the publication).
    pub settled: compile::Settled,
}

/// The compiler of each interpreter, or why it cannot run.
type Compilers = Mutex<HashMap<String, Result<Arc<Compiler>, String>>>;

/// The compilers (one worker each, per interpreter) and the pending compilation of each document.
pub struct Compiling {
    compilers: Arc<Compilers>,
    pending: Mutex<HashMap<Uri, tokio::task::AbortHandle>>,
    /// One document's compilation at a time, from its preparation to its
    /// report: a file's jobs (each kernel's bundle and signatures) are made
    /// only when its turn comes. Twenty 5,000-line files opened at once held
    /// every file's jobs together while the first waited for the compiler
    /// (`lsp_latency`'s 20-file run: peak RSS 58.4 -> 54.8 MB with turns);
    /// the one worker compiles them one after another anyway.
    turn: Arc<tokio::sync::Semaphore>,
}

impl Default for Compiling {
    fn default() -> Self {
        Compiling {
            compilers: Default::default(),
            pending: Default::default(),
            turn: Arc::new(tokio::sync::Semaphore::new(1)),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Compiling {
    /// Compiles `uri` after the debounce (or at once, on save), cancelling the
    /// compilation pending or running for it.
    pub(crate) fn schedule(
        &self,
        state: &Arc<Mutex<State>>,
        publish_tx: &Publisher,
        client: &Client,
        uri: &Uri,
        at_once: bool,
    ) {
        let settings = {
            let st = lock(state);
            match st.docs.get(uri) {
                Some(doc) => doc.settings.clone(),
                None => return,
            }
        };
        if !settings.compile.enabled || file_path(uri).is_none() {
            return;
        }
        let delay = if at_once { Duration::ZERO } else { Duration::from_millis(settings.compile.debounce_ms) };
        let (state, publish_tx, client, uri2) = (state.clone(), publish_tx.clone(), client.clone(), uri.clone());
        let (compilers, turn) = (self.compilers.clone(), self.turn.clone());
        let task = tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            // A compilation (and the worker's start, the first time) waits for a pause in typing in any document.
            super::background::edits().paused(super::background::PAUSE).await;
            let Ok(_turn) = turn.acquire().await else { return };
            compile_document(&state, &publish_tx, &client, &compilers, &uri2).await;
        });
        if let Some(old) = lock(&self.pending).insert(uri.clone(), task.abort_handle()) {
            old.abort();
        }
    }

    /// Cancels what is pending for a closed document.
    pub fn forget(&self, uri: &Uri) {
        if let Some(old) = lock(&self.pending).remove(uri) {
            old.abort();
        }
    }
}

/// The compiler for `python`, prepared once (its sandbox; the worker starts on the first request).
async fn compiler_for(
    compilers: &Compilers,
    python: &str,
    settings: &crate::config::Settings,
) -> (Result<Arc<Compiler>, String>, bool) {
    let known = lock(compilers).get(python).cloned();
    if let Some(c) = known {
        return (c, false);
    }
    let (p, s) = (python.to_string(), settings.clone());
    // Preparing the sandbox asks the interpreter where it lives: a blocking call.
    let made = tokio::task::spawn_blocking(move || Compiler::in_background(&p, &s, 1).map(Arc::new))
        .await
        .unwrap_or_else(|e| Err(format!("the compile worker could not be prepared: {e}")));
    let mut map = lock(compilers);
    let first = !map.contains_key(python);
    let entry = map.entry(python.to_string()).or_insert(made).clone();
    (entry, first)
}

async fn compile_document(
    state: &Arc<Mutex<State>>,
    publish_tx: &Publisher,
    client: &Client,
    compilers: &Compilers,
    uri: &Uri,
) {
    let began = std::time::Instant::now();
    let (text, version, settings) = {
        let st = lock(state);
        let Some(doc) = st.docs.get(uri) else { return };
        (doc.shared_text(), doc.version, doc.settings.clone())
    };
    let Some(path) = file_path(uri) else { return };
    let python = compile::resolve_python(&path, &settings);
    if matches!(lock(compilers).get(&python), Some(Err(_))) {
        // This interpreter's compiler is known not to run (its first failure said so): nothing to prepare.
        unavailable(state, publish_tx, uri);
        return;
    }
    let (compiler, first) = compiler_for(compilers, &python, &settings).await;
    let compiler = match compiler {
        Ok(c) => c,
        Err(why) => {
            unavailable(state, publish_tx, uri);
            if first {
                notify_off(client, &why).await;
            }
            return;
        }
    };
    // A file that may hold kernels: the worker is started (once) before its
    // jobs are made, so that where it cannot run (no Triton, no sandbox) no
    // file's jobs are prepared for nothing (a parse and every kernel's bundle:
    // about 12 MB of peak memory for 5,000 lines).
    if text.contains("jit") {
        if let Err(why) = compiler.hello().await {
            compiler_failed(state, publish_tx, client, compilers, &python, why, uri).await;
            return;
        }
    }
    // Signatures, bundles and kernel ranges for every kernel of the file: CPU
    // work on the background thread, never on a runtime worker the next
    // edit's analysis needs. It parses the text there: a queued job holding
    // the document's tree would keep the trees of evicted documents alive
    // (20 files opened at once: +55 MB).
    let (s, file) = (settings.clone(), path.clone());
    let prepared = super::background::run(move || {
        let tree = crate::model::parse_forest(&text);
        let unparsed = tree.has_error();
        let jobs = compile::jobs(&file, &text, &tree, &s);
        let ranges = compile::kernel_ranges(&text, &tree);
        (text, jobs, ranges, unparsed)
    });
    let Some((text, jobs, kernel_ranges, unparsed)) = prepared.await else { return };
    if jobs.is_empty() && !unparsed {
        // No kernel and nothing for CPython's parser to confirm: no worker is started for this file.
        return;
    }
    let outcomes = match compiler.run(jobs).await {
        Ok(o) => o,
        Err(why) => {
            compiler_failed(state, publish_tx, client, compilers, &python, why, uri).await;
            return;
        }
    };
    let python_parses = unparsed && compiler.python_parses(&text).await == Ok(true);
    let read = super::background::run(move || {
        let (diagnostics, resources) = compile::report(&text, &outcomes);
        (diagnostics, resources, compile::settled(&outcomes, &kernel_ranges), outcomes.len())
    });
    let Some((diagnostics, resources, mut settled, configurations)) = read.await else { return };
    settled.python_parses = python_parses;
    settled.errors = diagnostics.iter().filter(|d| d.code == "KL901").map(|d| d.range).collect();
    let compiled = Compiled { version, diagnostics, resources, settled };
    let st = &mut *lock(state);
    let current = st.docs.get(uri).is_some_and(|d| d.version == version);
    if !current {
        return;
    }
    st.compile.insert(uri.clone(), compiled);
    st.compile_unavailable = false;
    publish_tx.publish(&st, uri);
    let refresh = (st.caps.inlay_hint_refresh, st.caps.pull_diagnostics && st.caps.diagnostic_refresh);
    tracing::debug!("version {version}: {configurations} kernel configurations compiled in {:?}", began.elapsed());
    let client = client.clone();
    // The hints and a pulling client's diagnostics changed: ask the editor to fetch them again.
    tokio::spawn(async move {
        if refresh.0 {
            let _ = client.inlay_hint_refresh().await;
        }
        if refresh.1 {
            let _ = client.workspace_diagnostic_refresh().await;
        }
    });
}

/// The worker for `python` could not start (no Triton, no sandbox): said
/// once per interpreter, and no file is prepared for it again.
async fn compiler_failed(
    state: &Arc<Mutex<State>>,
    publish_tx: &Publisher,
    client: &Client,
    compilers: &Compilers,
    python: &str,
    why: String,
    uri: &Uri,
) {
    let newly_off = {
        let mut map = lock(compilers);
        let was_on = map.get(python).is_some_and(|c| c.is_ok());
        map.insert(python.to_string(), Err(why.clone()));
        was_on
    };
    unavailable(state, publish_tx, uri);
    if newly_off {
        notify_off(client, &why).await;
    }
}

/// The worker cannot run: a KL900 waiting for it is shown as tree-sitter's error again.
fn unavailable(state: &Arc<Mutex<State>>, publish_tx: &Publisher, uri: &Uri) {
    let st = &mut *lock(state);
    let was = std::mem::replace(&mut st.compile_unavailable, true);
    if !was {
        publish_tx.publish(&st, uri);
    }
}

async fn notify_off(client: &Client, why: &str) {
    client
        .show_message(
            MessageType::WARNING,
            format!("kernel-lsp: kernels are not compiled while you type ({why}); static diagnostics only"),
        )
        .await;
}

/// The compile diagnostics of a document, where they describe its current version.
pub fn diagnostics<'s>(st: &'s State, uri: &Uri) -> &'s [Diagnostic] {
    let version = st.docs.get(uri).map(|d| d.version);
    match st.compile.get(uri) {
        Some(c) if Some(c.version) == version => &c.diagnostics,
        _ => &[],
    }
}

/// Whether the document's KL900 (tree-sitter's word) waits for CPython's parser in the
/// compile worker: compiling is on for it and has not answered for this version yet.
pub(crate) fn kl900_unconfirmed(st: &State, uri: &Uri) -> bool {
    let Some(doc) = st.docs.get(uri) else { return false };
    doc.settings.compile.enabled
        && file_path(uri).is_some()
        && !st.compile_unavailable
        && st.compile.get(uri).is_none_or(|c| c.version != doc.version)
}

/// A KL900 shown before Python's parser confirmed it: a warning that says so.
pub(crate) fn tentative(d: &Diagnostic) -> Diagnostic {
    Diagnostic {
        severity: crate::diagnostic::Severity::Warning,
        message: format!("{} (Python's parser has not confirmed it yet)", d.message).into(),
        ..d.clone()
    }
}

/// A static diagnostic of the document as it stands once the compiler had
/// its say: withdrawn (None), or confirmed in its message ([`compile::Settled::settle`]).
pub fn settle<'d>(st: &State, uri: &Uri, d: &'d Diagnostic) -> Option<std::borrow::Cow<'d, Diagnostic>> {
    let doc = st.docs.get(uri)?;
    match st.compile.get(uri) {
        Some(c) if c.version == doc.version => c.settled.settle(doc.text(), d).map(std::borrow::Cow::Owned),
        // Nothing compiled for this version: the diagnostic as it is, not a copy (a publication holds hundreds).
        _ => Some(std::borrow::Cow::Borrowed(d)),
    }
}

/// Markdown for a hover on a kernel's name: what each configuration compiled to.
pub fn hover(st: &State, uri: &Uri, offset: usize) -> Option<String> {
    let version = st.docs.get(uri)?.version;
    let c = st.compile.get(uri).filter(|c| c.version == version)?;
    let mine: Vec<&Resources> =
        c.resources.iter().filter(|r| r.name_range.start <= offset && offset <= r.name_range.end).collect();
    let first = mine.first()?;
    let mut out = format!("**Compiled** by Triton {} for {}\n\n", first.triton, first.target);
    out.push_str("| configuration | registers | spills | shared (B) | local (B) |\n|---|---|---|---|---|\n");
    let n = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
    for r in &mine {
        let limit = r.shared_limit.map(|l| format!(" / {l}")).unwrap_or_default();
        out.push_str(&format!(
            "| {} | {} | {} | {}{limit} | {} |\n",
            r.config,
            n(r.n_regs),
            n(r.n_spills),
            n(r.shared),
            n(r.local)
        ));
    }
    let mut assumed: Vec<&String> = mine.iter().flat_map(|r| &r.assumed).collect();
    assumed.sort();
    assumed.dedup();
    if !assumed.is_empty() {
        out.push_str(&format!("\nAssumed: {}\n", assumed.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("; ")));
    }
    Some(out)
}

/// One hint per compiled kernel at the end of its `def` line: the largest
/// figures over its configurations ("sm_90: 22 regs, 0 spills, 0 B shared").
/// None where a benchmark's hint is there already.
pub(crate) fn inlay_hints(
    st: &State,
    uri: &Uri,
    encoding: super::convert::Encoding,
) -> Vec<tower_lsp_server::ls_types::InlayHint> {
    let Some(doc) = st.docs.get(uri) else { return Vec::new() };
    let Some(c) = st.compile.get(uri).filter(|c| c.version == doc.version) else { return Vec::new() };
    if st.bench.get(uri).is_some_and(|b| b.result.is_some()) {
        return Vec::new();
    }
    let mut kernels: Vec<crate::text::TextRange> = c.resources.iter().map(|r| r.name_range).collect();
    kernels.dedup();
    let mut out = Vec::new();
    for name in kernels {
        let mine: Vec<&Resources> = c.resources.iter().filter(|r| r.name_range == name).collect();
        let max = |f: fn(&Resources) -> Option<u64>| mine.iter().filter_map(|r| f(r)).max();
        let (Some(regs), Some(first)) = (max(|r| r.n_regs), mine.first()) else { continue };
        let configs = if mine.len() > 1 { format!(" (max of {} configs)", mine.len()) } else { String::new() };
        let label = format!(
            "{}: {regs} regs, {} spills, {} B shared{configs}",
            first.target,
            // A kernel with a stack frame: its spills are not known without the driver.
            if mine.iter().all(|r| r.n_spills.is_some()) {
                max(|r| r.n_spills).unwrap_or(0).to_string()
            } else {
                "?".to_string()
            },
            max(|r| r.shared).unwrap_or(0)
        );
        out.push(super::lens::hint_at_line_end(doc, name.start, label, encoding));
    }
    out
}
